#include "common/config/drafter_config.h"

#include <algorithm>
#include <fstream>
#include <optional>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace twinspan::drafter {
namespace {

using nlohmann::json;

// `dflash_config.name` wins over the top-level `name`, as the reference reads them.
const json* FindDraftValue(const json& config, const char* name) {
  const auto dflash = config.find("dflash_config");
  if (dflash != config.end() && dflash->is_object()) {
    const auto it = dflash->find(name);
    if (it != dflash->end() && !it->is_null()) return &*it;
  }
  const auto it = config.find(name);
  if (it != config.end() && !it->is_null()) return &*it;
  return nullptr;
}

absl::StatusOr<int64_t> ReadInt(const json* value, const char* name, const std::string& source) {
  if (value == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: missing field %s", source, name));
  }
  if (!value->is_number_integer() && !value->is_number_unsigned()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: field %s must be an integer, got %s", source, name, value->dump()));
  }
  return value->get<int64_t>();
}

absl::StatusOr<int64_t> RequiredPositive(const json& config, const char* name,
                                         const std::string& source) {
  const auto it = config.find(name);
  ABSL_ASSIGN_OR_RETURN(int64_t value, ReadInt(it == config.end() ? nullptr : &*it, name, source));
  if (value <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: field %s = %d must be positive", source, name, value));
  }
  return value;
}

absl::StatusOr<double> OptionalNumber(const json* value, const char* name, double fallback,
                                      const std::string& source) {
  if (value == nullptr) return fallback;
  if (!value->is_number()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: field %s must be a number, got %s", source, name, value->dump()));
  }
  return value->get<double>();
}

absl::StatusOr<DrafterKind> ParseKind(const json& config, const std::string& source) {
  const auto it = config.find("architectures");
  if (it == config.end() || !it->is_array() || it->empty() || !(*it)[0].is_string()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: field architectures must name DFlashDraftModel or DFlash2DraftModel", source));
  }
  const std::string name = (*it)[0].get<std::string>();
  if (name == "DFlashDraftModel") return DrafterKind::kDFlash;
  if (name == "DFlash2DraftModel") return DrafterKind::kDFlash2;
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: architectures[0] = \"%s\" is not DFlashDraftModel or DFlash2DraftModel", source, name));
}

absl::Status ParseLayers(const json& config, const std::string& source, DrafterConfig& out) {
  std::vector<std::string> types(out.num_layers, "full_attention");
  const auto it = config.find("layer_types");
  if (it != config.end() && !it->is_null()) {
    if (!it->is_array() || static_cast<int64_t>(it->size()) != out.num_layers) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: layer_types must list num_hidden_layers = %d entries", source, out.num_layers));
    }
    for (int64_t i = 0; i < out.num_layers; ++i) {
      const json& t = (*it)[i];
      if (!t.is_string() || (t != "full_attention" && t != "sliding_attention")) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: layer_types[%d] = %s is not full_attention or sliding_attention",
                            source, i, t.dump()));
      }
      types[i] = t.get<std::string>();
    }
  }
  std::optional<bool> is_causal;
  for (const char* name : {"is_causal", "causal"}) {
    const json* value = FindDraftValue(config, name);
    if (value == nullptr) continue;
    if (!value->is_boolean()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: field %s must be a boolean, got %s", source, name, value->dump()));
    }
    is_causal = value->get<bool>();
    break;
  }
  int64_t window = 0;
  const bool any_sliding =
      std::find(types.begin(), types.end(), "sliding_attention") != types.end();
  if (any_sliding) {
    const auto w = config.find("sliding_window");
    ABSL_ASSIGN_OR_RETURN(window, ReadInt(w == config.end() || w->is_null() ? nullptr : &*w,
                                          "sliding_window", source));
    if (window <= 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: sliding_window = %d must be positive", source, window));
    }
  }
  for (const std::string& type : types) {
    const bool sliding = type == "sliding_attention";
    out.layers.push_back(
        {.causal = is_causal.value_or(sliding), .sliding_window = sliding ? window : 0});
  }
  return absl::OkStatus();
}

absl::Status ParseDFlash2(const json& config, const std::string& source, DrafterConfig& out) {
  struct Field {
    const char* name;
    int64_t* value;
  };
  for (const Field& f :
       {Field{"conv_kernel_size", &out.conv_kernel_size},
        Field{"conv_group_size", &out.conv_group_size}, Field{"selector_rank", &out.selector_rank},
        Field{"selector_top_k", &out.selector_top_k}}) {
    ABSL_ASSIGN_OR_RETURN(*f.value, ReadInt(FindDraftValue(config, f.name), f.name, source));
    if (*f.value <= 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: dflash_config.%s = %d must be positive", source, f.name, *f.value));
    }
  }
  if (out.hidden_size % out.conv_group_size != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: hidden_size = %d is not a multiple of conv_group_size = %d", source,
                        out.hidden_size, out.conv_group_size));
  }
  if (out.selector_top_k > out.vocab_size) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: selector_top_k = %d exceeds vocab_size = %d", source,
                        out.selector_top_k, out.vocab_size));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DrafterConfig> ParseDrafterConfig(const json& config, const std::string& source) {
  if (!config.is_object()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: not a JSON object", source));
  }
  DrafterConfig out;
  ABSL_ASSIGN_OR_RETURN(out.kind, ParseKind(config, source));
  ABSL_ASSIGN_OR_RETURN(out.vocab_size, RequiredPositive(config, "vocab_size", source));
  ABSL_ASSIGN_OR_RETURN(out.hidden_size, RequiredPositive(config, "hidden_size", source));
  ABSL_ASSIGN_OR_RETURN(out.intermediate_size,
                        RequiredPositive(config, "intermediate_size", source));
  ABSL_ASSIGN_OR_RETURN(out.num_layers, RequiredPositive(config, "num_hidden_layers", source));
  ABSL_ASSIGN_OR_RETURN(out.num_heads, RequiredPositive(config, "num_attention_heads", source));
  ABSL_ASSIGN_OR_RETURN(out.num_kv_heads, RequiredPositive(config, "num_key_value_heads", source));
  if (config.contains("head_dim") && !config["head_dim"].is_null()) {
    ABSL_ASSIGN_OR_RETURN(out.head_dim, RequiredPositive(config, "head_dim", source));
  } else {
    out.head_dim = out.hidden_size / out.num_heads;
  }
  if (out.num_heads % out.num_kv_heads != 0 || out.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: num_attention_heads = %d must be a multiple of num_key_value_heads = %d and head_dim "
        "= %d even",
        source, out.num_heads, out.num_kv_heads, out.head_dim));
  }
  if (config.contains("attention_bias") && config["attention_bias"] == true) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: attention_bias = true is not supported (no published drafter has it)", source));
  }
  const auto eps = config.find("rms_norm_eps");
  ABSL_ASSIGN_OR_RETURN(const double rms_eps, OptionalNumber(eps == config.end() ? nullptr : &*eps,
                                                             "rms_norm_eps", 1e-6, source));
  out.rms_norm_eps = static_cast<float>(rms_eps);

  const json* theta = nullptr;
  if (const auto rp = config.find("rope_parameters"); rp != config.end() && rp->is_object()) {
    if (const auto t = rp->find("rope_theta"); t != rp->end()) theta = &*t;
  }
  if (theta == nullptr) {
    if (const auto t = config.find("rope_theta"); t != config.end()) theta = &*t;
  }
  ABSL_ASSIGN_OR_RETURN(out.rope_theta, OptionalNumber(theta, "rope_theta", 10000.0, source));
  if (out.rope_theta <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: rope_theta = %f must be positive", source, out.rope_theta));
  }
  ABSL_RETURN_IF_ERROR(ParseLayers(config, source, out));

  if (const json* block = FindDraftValue(config, "block_size"); block != nullptr) {
    ABSL_ASSIGN_OR_RETURN(out.block_size, ReadInt(block, "block_size", source));
  }
  if (out.block_size < 2) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: block_size = %d must be at least 2", source, out.block_size));
  }
  ABSL_ASSIGN_OR_RETURN(const int64_t mask,
                        ReadInt(FindDraftValue(config, "mask_token_id"), "mask_token_id", source));
  if (mask < 0 || mask >= out.vocab_size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: mask_token_id = %d is outside the vocabulary [0, %d)", source, mask, out.vocab_size));
  }
  out.mask_token_id = static_cast<int32_t>(mask);
  const json* ids = FindDraftValue(config, "target_layer_ids");
  if (ids == nullptr || !ids->is_array() || ids->empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: dflash_config.target_layer_ids must be a non-empty list", source));
  }
  for (const json& id : *ids) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: dflash_config.target_layer_ids holds %s, not a layer index", source, id.dump()));
    }
    out.target_layer_ids.push_back(id.get<int64_t>());
  }
  ABSL_ASSIGN_OR_RETURN(const double scale,
                        OptionalNumber(FindDraftValue(config, "input_embedding_scale"),
                                       "input_embedding_scale", 1.0, source));
  ABSL_ASSIGN_OR_RETURN(const double multiplier,
                        OptionalNumber(FindDraftValue(config, "output_multiplier"),
                                       "output_multiplier", 1.0, source));
  ABSL_ASSIGN_OR_RETURN(const double softcap,
                        OptionalNumber(FindDraftValue(config, "final_logit_softcapping"),
                                       "final_logit_softcapping", 0.0, source));
  out.input_embedding_scale = static_cast<float>(scale);
  out.output_multiplier = static_cast<float>(multiplier);
  out.final_logit_softcapping = softcap > 0 ? static_cast<float>(softcap) : 0.0f;
  if (const auto named = config.find("head_variants"); named != config.end()) {
    if (!named->is_object()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: head_variants must be an object of name -> span list, not %s",
                          source, named->dump()));
    }
    for (const auto& [name, spans] : named->items()) {
      if (!spans.is_string() || name == "full") {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: head_variants.%s must be a span list like \"0:6144,8064:8192\" (and full is the "
            "whole head)",
            source, name));
      }
      out.head_variants[name] = spans.get<std::string>();
    }
  }
  if (out.kind == DrafterKind::kDFlash2) ABSL_RETURN_IF_ERROR(ParseDFlash2(config, source, out));
  return out;
}

absl::StatusOr<DrafterConfig> LoadDrafterConfig(const std::string& dir) {
  const std::string path = dir + "/config.json";
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrFormat("%s: cannot open", path));
  json config = json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: not valid JSON", path));
  }
  return ParseDrafterConfig(config, path);
}

}  // namespace twinspan::drafter
