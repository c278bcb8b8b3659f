#include "common/tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace twinspan::tokenizer {
namespace {

absl::Status AddForm(const nlohmann::json& config, std::vector<NormalForm>* forms) {
  if (!config.is_object() || !config.contains("type") || !config["type"].is_string()) {
    return absl::InvalidArgumentError("tokenizer.json: normalizer without a string \"type\"");
  }
  const std::string type = config["type"].get<std::string>();
  if (type == "NFC") {
    forms->push_back(NormalForm::kNfc);
  } else if (type == "NFD") {
    forms->push_back(NormalForm::kNfd);
  } else if (type == "NFKC") {
    forms->push_back(NormalForm::kNfkc);
  } else if (type == "NFKD") {
    forms->push_back(NormalForm::kNfkd);
  } else if (type == "Sequence") {
    if (!config.contains("normalizers") || !config["normalizers"].is_array()) {
      return absl::InvalidArgumentError(
          "tokenizer.json: Sequence normalizer without \"normalizers\"");
    }
    for (const nlohmann::json& item : config["normalizers"]) {
      absl::Status status = AddForm(item, forms);
      if (!status.ok()) return status;
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("tokenizer.json: normalizer type \"", type,
                     "\" is not supported (supported: NFC, NFD, NFKC, NFKD, Sequence)"));
  }
  return absl::OkStatus();
}

// Code points below U+0300 are NFC-stable on their own and never the second half of a composition.
bool AllBelow(std::string_view text, unsigned char limit_lead) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= limit_lead) return false;
  }
  return true;
}

bool AlreadyNormal(std::string_view text, NormalForm form) {
  // U+0300 starts with byte 0xCC; every code point below it has lead byte < 0xCC.
  if (form == NormalForm::kNfc) return AllBelow(text, 0xCC);
  return AllBelow(text, 0x80);
}

utf8proc_option_t OptionsFor(NormalForm form) {
  switch (form) {
    case NormalForm::kNfc:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    case NormalForm::kNfd:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
    case NormalForm::kNfkc:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
    case NormalForm::kNfkd:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  }
  return UTF8PROC_STABLE;
}

}  // namespace

absl::StatusOr<Normalizer> Normalizer::FromJson(const nlohmann::json& config) {
  Normalizer normalizer;
  if (config.is_null()) return normalizer;
  absl::Status status = AddForm(config, &normalizer.forms_);
  if (!status.ok()) return status;
  return normalizer;
}

absl::Status Normalizer::Normalize(std::string_view text, std::string* out) const {
  out->assign(text);
  for (NormalForm form : forms_) {
    if (AlreadyNormal(*out, form)) continue;
    utf8proc_uint8_t* result = nullptr;
    const utf8proc_ssize_t length =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(out->data()),
                     static_cast<utf8proc_ssize_t>(out->size()), &result, OptionsFor(form));
    if (length < 0) {
      return absl::InternalError(
          absl::StrCat("tokenizer normalizer: utf8proc failed: ", utf8proc_errmsg(length)));
    }
    out->assign(reinterpret_cast<const char*>(result), static_cast<size_t>(length));
    std::free(result);
  }
  return absl::OkStatus();
}

}  // namespace twinspan::tokenizer
