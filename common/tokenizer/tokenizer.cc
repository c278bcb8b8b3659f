#include "common/tokenizer/tokenizer.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/hash/sha256.h"
#include "common/status.h"
#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/utf8.h"
#include "nlohmann/json.hpp"

namespace twinspan::tokenizer {
namespace {

absl::Status CheckByteLevelOrNull(const nlohmann::json& config, const char* field,
                                  bool allow_null) {
  if (config.is_null() && allow_null) return absl::OkStatus();
  const std::string type =
      config.is_object() && config.contains("type") && config["type"].is_string()
          ? config["type"].get<std::string>()
          : std::string("(none)");
  if (type != "ByteLevel") {
    return absl::InvalidArgumentError(absl::StrCat("tokenizer.json: ", field, " type \"", type,
                                                   "\" is not supported (only ByteLevel)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  return buffer.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Open(const std::string& dir_or_file) {
  std::filesystem::path path(dir_or_file);
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) path /= "tokenizer.json";
  ABSL_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path.string()));
  return FromJsonBytes(bytes, path.string());
}

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJsonBytes(std::string_view json_bytes,
                                                                    std::string_view source_view) {
  const std::string source(source_view);
  const auto named = [&](const absl::Status& status) {
    return absl::Status(status.code(), absl::StrCat(source, ": ", status.message()));
  };
  nlohmann::json root = nlohmann::json::parse(json_bytes, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not a JSON object"));
  }
  auto tokenizer = std::unique_ptr<Tokenizer>(new Tokenizer());
  try {
    for (const char* field : {"truncation", "padding"}) {
      if (root.contains(field) && !root[field].is_null()) {
        return absl::InvalidArgumentError(
            absl::StrCat(source, ": tokenizer.json sets \"", field, "\", which is not supported"));
      }
    }
    const nlohmann::json null;
    const auto field = [&](const char* name) -> const nlohmann::json& {
      return root.contains(name) ? root[name] : null;
    };
    absl::Status status = CheckByteLevelOrNull(field("decoder"), "decoder", false);
    if (status.ok()) status = CheckByteLevelOrNull(field("post_processor"), "post_processor", true);
    if (!status.ok()) return named(status);

    absl::StatusOr<Normalizer> normalizer = Normalizer::FromJson(field("normalizer"));
    if (!normalizer.ok()) return named(normalizer.status());
    tokenizer->normalizer_ = *std::move(normalizer);
    absl::StatusOr<PreTokenizer> pre = PreTokenizer::FromJson(field("pre_tokenizer"));
    if (!pre.ok()) return named(pre.status());
    tokenizer->pre_tokenizer_ = std::make_unique<PreTokenizer>(*std::move(pre));
    absl::StatusOr<std::unique_ptr<BpeModel>> model = BpeModel::FromJson(field("model"));
    if (!model.ok()) return named(model.status());
    tokenizer->model_ = *std::move(model);
    absl::StatusOr<AddedVocabulary> added =
        AddedVocabulary::FromJson(field("added_tokens"), tokenizer->normalizer_);
    if (!added.ok()) return named(added.status());
    tokenizer->added_ = std::make_unique<AddedVocabulary>(*std::move(added));
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": malformed tokenizer.json: ", e.what()));
  }

  int32_t max_id = -1;
  for (const auto& [token, id] : tokenizer->model_->vocab()) max_id = std::max(max_id, id);
  for (const AddedToken& token : tokenizer->added_->tokens()) max_id = std::max(max_id, token.id);
  // Ids index dense tables: an id far past the token count is a corrupt file, not a vocabulary.
  constexpr int64_t kMaxUnusedIds = int64_t{1} << 16;
  const int64_t tokens =
      static_cast<int64_t>(tokenizer->model_->vocab().size() + tokenizer->added_->tokens().size());
  if (max_id >= tokens + kMaxUnusedIds) {
    return named(absl::InvalidArgumentError(absl::StrCat(
        "token id ", max_id, " leaves more than ", kMaxUnusedIds, " of the ids below it unused (",
        tokens, " tokens); a tokenizer's ids are dense")));
  }
  const size_t size = static_cast<size_t>(max_id) + 1;
  tokenizer->id_to_token_.assign(size, std::string());
  tokenizer->known_.assign(size, false);
  tokenizer->special_.assign(size, false);
  for (const auto& [token, id] : tokenizer->model_->vocab()) {
    tokenizer->id_to_token_[id] = token;
    tokenizer->known_[id] = true;
  }
  for (const AddedToken& token : tokenizer->added_->tokens()) {
    tokenizer->id_to_token_[token.id] = token.content;
    tokenizer->known_[token.id] = true;
    tokenizer->special_[token.id] = token.special;
  }
  tokenizer->id_to_bytes_.resize(size);
  for (size_t id = 0; id < size; ++id) {
    if (tokenizer->known_[id])
      tokenizer->id_to_bytes_[id] = ByteLevelTokenBytes(tokenizer->id_to_token_[id]);
  }
  absl::StatusOr<std::string> digest = hash::Sha256Hex(json_bytes);
  if (!digest.ok()) return named(digest.status());
  tokenizer->sha256_ = *std::move(digest);
  return tokenizer;
}

absl::Status Tokenizer::EncodeText(std::string_view text, std::vector<int32_t>* ids) const {
  return pre_tokenizer_->Split(text, [&](std::string_view piece) { model_->Encode(piece, ids); });
}

absl::Status Tokenizer::EncodeNormalized(std::string_view text, bool parse_special,
                                         std::string* scratch, std::vector<int32_t>* ids) const {
  if (!normalizer_.is_identity()) {
    ABSL_RETURN_IF_ERROR(normalizer_.Normalize(text, scratch));
    text = *scratch;
  }
  if (!added_->has_normalized_tokens()) return EncodeText(text, ids);
  std::vector<Segment> segments;
  added_->Split(text, /*normalized_pass=*/true, parse_special, &segments);
  for (const Segment& s : segments) {
    if (s.id >= 0) {
      ids->push_back(s.id);
    } else {
      ABSL_RETURN_IF_ERROR(EncodeText(text.substr(s.begin, s.end - s.begin), ids));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::Encode(std::string_view text,
                                                       bool parse_special) const {
  ABSL_RETURN_IF_ERROR(ValidateUtf8(text));
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<Segment> segments;
  added_->Split(text, /*normalized_pass=*/false, parse_special, &segments);
  std::string scratch;
  for (const Segment& s : segments) {
    if (s.id >= 0) {
      ids.push_back(s.id);
      continue;
    }
    ABSL_RETURN_IF_ERROR(
        EncodeNormalized(text.substr(s.begin, s.end - s.begin), parse_special, &scratch, &ids));
  }
  return ids;
}

absl::StatusOr<std::string> Tokenizer::Decode(absl::Span<const int32_t> ids,
                                              bool skip_special) const {
  std::string bytes;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::optional<std::string_view> token = TokenBytes(ids[i]);
    if (!token.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("decode: id ", ids[i], " at position ", i,
                                                     " is not in the tokenizer (vocab_size ",
                                                     vocab_size(), ")"));
    }
    if (skip_special && special_[ids[i]]) continue;
    bytes.append(*token);
  }
  std::string text;
  text.reserve(bytes.size());
  AppendUtf8Lossy(bytes, &text);
  return text;
}

std::optional<std::string_view> Tokenizer::TokenBytes(int32_t id) const {
  if (id < 0 || id >= vocab_size() || !known_[id]) return std::nullopt;
  return std::string_view(id_to_bytes_[id]);
}

bool Tokenizer::IsSpecial(int32_t id) const { return id >= 0 && id < vocab_size() && special_[id]; }

std::optional<int32_t> Tokenizer::TokenId(std::string_view token) const {
  if (const AddedToken* added = added_->Find(token)) return added->id;
  auto it = model_->vocab().find(absl::string_view(token.data(), token.size()));
  if (it == model_->vocab().end()) return std::nullopt;
  return it->second;
}

std::optional<std::string_view> Tokenizer::IdToToken(int32_t id) const {
  if (id < 0 || id >= vocab_size() || !known_[id]) return std::nullopt;
  return std::string_view(id_to_token_[id]);
}

}  // namespace twinspan::tokenizer
