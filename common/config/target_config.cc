#include "common/config/target_config.h"

#include <cmath>
#include <fstream>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace twinspan::target {
namespace {

using nlohmann::json;

absl::Status FieldError(const std::string& source, const std::string& field,
                        const std::string& why) {
  return absl::InvalidArgumentError(absl::StrFormat("%s: field %s %s", source, field, why));
}

absl::StatusOr<int64_t> GetInt(const json& j, const std::string& field, const std::string& source,
                               bool required = true, int64_t fallback = 0) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) {
    if (required) return FieldError(source, field, "is missing");
    return fallback;
  }
  if (!it->is_number_integer()) return FieldError(source, field, "is not an integer");
  return it->get<int64_t>();
}

absl::StatusOr<double> GetNumber(const json& j, const std::string& field, const std::string& source,
                                 double fallback) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) return FieldError(source, field, "is not a number");
  return it->get<double>();
}

absl::StatusOr<TargetFamily> FamilyOf(const std::string& model_type, const std::string& source) {
  if (model_type == "qwen3") return TargetFamily::kQwen3;
  if (model_type == "qwen3_5" || model_type == "qwen3_5_text") return TargetFamily::kQwen35;
  return FieldError(
      source, "model_type",
      "\"" + model_type + "\" is not a supported target (qwen3, qwen3_5, qwen3_5_text)");
}

absl::Status ParseLayerTypes(const json& text, const std::string& source, TargetConfig& c) {
  auto it = text.find("layer_types");
  if (it != text.end() && !it->is_null()) {
    if (!it->is_array() || static_cast<int64_t>(it->size()) != c.num_layers) {
      return FieldError(source, "layer_types",
                        absl::StrFormat("must list %d layers", c.num_layers));
    }
    for (const json& t : *it) {
      const std::string name = t.is_string() ? t.get<std::string>() : "";
      if (name == "full_attention") {
        c.layer_types.push_back(LayerType::kFullAttention);
      } else if (name == "sliding_attention") {
        return absl::UnimplementedError(absl::StrFormat(
            "%s: layer_types has sliding_attention layers, which the target does not support",
            source));
      } else if (name == "linear_attention") {
        c.layer_types.push_back(LayerType::kLinearAttention);
      } else {
        return FieldError(source, "layer_types", "has unknown entry " + t.dump());
      }
    }
    return absl::OkStatus();
  }
  ABSL_ASSIGN_OR_RETURN(const int64_t interval,
                        GetInt(text, "full_attention_interval", source, false, 1));
  if (interval <= 0) return FieldError(source, "full_attention_interval", "must be positive");
  for (int64_t i = 0; i < c.num_layers; ++i) {
    c.layer_types.push_back((i + 1) % interval == 0 ? LayerType::kFullAttention
                                                    : LayerType::kLinearAttention);
  }
  return absl::OkStatus();
}

absl::Status ParseRope(const json& text, const std::string& source, TargetConfig& c) {
  const json* rope = nullptr;
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    auto it = text.find(key);
    if (it != text.end() && it->is_object()) {
      rope = &*it;
      break;
    }
  }
  ABSL_ASSIGN_OR_RETURN(c.rope_theta, GetNumber(text, "rope_theta", source, 10000.0));
  ABSL_ASSIGN_OR_RETURN(c.partial_rotary_factor,
                        GetNumber(text, "partial_rotary_factor", source, 1.0));
  if (rope != nullptr) {
    ABSL_ASSIGN_OR_RETURN(c.rope_theta, GetNumber(*rope, "rope_theta", source, c.rope_theta));
    ABSL_ASSIGN_OR_RETURN(c.partial_rotary_factor, GetNumber(*rope, "partial_rotary_factor", source,
                                                             c.partial_rotary_factor));
    auto type = rope->find("rope_type");
    if (type != rope->end() && type->is_string() && *type != "default") {
      return absl::UnimplementedError(
          absl::StrFormat("%s: rope_type %s is not supported", source, type->dump()));
    }
  }
  if (!(c.rope_theta > 0.0)) return FieldError(source, "rope_theta", "must be positive");
  const double rot = c.head_dim * c.partial_rotary_factor;
  c.rotary_dim = static_cast<int64_t>(std::llround(rot));
  if (!(c.partial_rotary_factor > 0.0 && c.partial_rotary_factor <= 1.0) ||
      std::fabs(rot - static_cast<double>(c.rotary_dim)) > 1e-9 || c.rotary_dim % 2 != 0) {
    return FieldError(source, "partial_rotary_factor",
                      absl::StrFormat("%g gives no even rotary width of head_dim %d",
                                      c.partial_rotary_factor, c.head_dim));
  }
  return absl::OkStatus();
}

absl::Status ParseEos(const json& config, const json& text, TargetConfig& c) {
  for (const json* j : {&config, &text}) {
    auto it = j->find("eos_token_id");
    if (it == j->end() || it->is_null()) continue;
    if (it->is_number_integer()) c.eos_token_ids.push_back(it->get<int64_t>());
    if (it->is_array()) {
      for (const json& id : *it) {
        if (id.is_number_integer()) c.eos_token_ids.push_back(id.get<int64_t>());
      }
    }
    if (!c.eos_token_ids.empty()) break;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TargetConfig> ParseTargetConfig(const json& config, const std::string& source) {
  if (!config.is_object()) return absl::InvalidArgumentError(source + ": not a JSON object");
  TargetConfig c;
  auto type_it = config.find("model_type");
  if (type_it == config.end() || !type_it->is_string()) {
    return FieldError(source, "model_type", "is missing");
  }
  c.model_type = type_it->get<std::string>();
  ABSL_ASSIGN_OR_RETURN(c.family, FamilyOf(c.model_type, source));
  const json* text_ptr = &config;
  auto text_it = config.find("text_config");
  if (text_it != config.end() && text_it->is_object()) text_ptr = &*text_it;
  const json& text = *text_ptr;

  ABSL_ASSIGN_OR_RETURN(c.vocab_size, GetInt(text, "vocab_size", source));
  ABSL_ASSIGN_OR_RETURN(c.hidden_size, GetInt(text, "hidden_size", source));
  ABSL_ASSIGN_OR_RETURN(c.intermediate_size, GetInt(text, "intermediate_size", source));
  ABSL_ASSIGN_OR_RETURN(c.num_layers, GetInt(text, "num_hidden_layers", source));
  ABSL_ASSIGN_OR_RETURN(c.num_heads, GetInt(text, "num_attention_heads", source));
  ABSL_ASSIGN_OR_RETURN(c.num_kv_heads,
                        GetInt(text, "num_key_value_heads", source, false, c.num_heads));
  if (c.num_heads <= 0) return FieldError(source, "num_attention_heads", "must be positive");
  ABSL_ASSIGN_OR_RETURN(c.head_dim,
                        GetInt(text, "head_dim", source, false, c.hidden_size / c.num_heads));
  ABSL_ASSIGN_OR_RETURN(c.max_position_embeddings,
                        GetInt(text, "max_position_embeddings", source, false, 0));
  ABSL_ASSIGN_OR_RETURN(const double eps, GetNumber(text, "rms_norm_eps", source, 1e-6));
  c.rms_norm_eps = static_cast<float>(eps);
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"vocab_size", c.vocab_size},
                                    {"hidden_size", c.hidden_size},
                                    {"intermediate_size", c.intermediate_size},
                                    {"num_hidden_layers", c.num_layers},
                                    {"num_key_value_heads", c.num_kv_heads},
                                    {"head_dim", c.head_dim}}) {
    if (value <= 0) return FieldError(source, name, "must be positive");
  }
  if (c.num_heads % c.num_kv_heads != 0) {
    return FieldError(
        source, "num_key_value_heads",
        absl::StrFormat("%d does not divide num_attention_heads %d", c.num_kv_heads, c.num_heads));
  }
  for (const json* j : {&config, &text}) {
    auto tie = j->find("tie_word_embeddings");
    if (tie != j->end() && tie->is_boolean()) {
      c.tie_word_embeddings = tie->get<bool>();
      break;
    }
  }
  auto bias = text.find("attention_bias");
  if (bias != text.end() && bias->is_boolean() && bias->get<bool>()) {
    return absl::UnimplementedError(
        absl::StrFormat("%s: attention_bias is true; the target does not support it", source));
  }
  auto sliding = text.find("use_sliding_window");
  if (sliding != text.end() && sliding->is_boolean() && sliding->get<bool>()) {
    return absl::UnimplementedError(
        absl::StrFormat("%s: use_sliding_window is true; the target does not support it", source));
  }
  ABSL_RETURN_IF_ERROR(ParseRope(text, source, c));
  ABSL_RETURN_IF_ERROR(ParseLayerTypes(text, source, c));
  ABSL_RETURN_IF_ERROR(ParseEos(config, text, c));
  ABSL_ASSIGN_OR_RETURN(c.num_experts, GetInt(text, "num_experts", source, false, 0));

  if (c.family == TargetFamily::kQwen35) {
    auto gate = text.find("attn_output_gate");
    c.attn_output_gate = gate == text.end() || !gate->is_boolean() || gate->get<bool>();
    ABSL_ASSIGN_OR_RETURN(c.linear_num_key_heads, GetInt(text, "linear_num_key_heads", source));
    ABSL_ASSIGN_OR_RETURN(c.linear_num_value_heads, GetInt(text, "linear_num_value_heads", source));
    ABSL_ASSIGN_OR_RETURN(c.linear_key_head_dim, GetInt(text, "linear_key_head_dim", source));
    ABSL_ASSIGN_OR_RETURN(c.linear_value_head_dim, GetInt(text, "linear_value_head_dim", source));
    ABSL_ASSIGN_OR_RETURN(c.linear_conv_kernel_dim, GetInt(text, "linear_conv_kernel_dim", source));
    if (c.linear_num_key_heads <= 0 || c.linear_num_value_heads % c.linear_num_key_heads != 0) {
      return FieldError(source, "linear_num_value_heads",
                        "must be a positive multiple of linear_num_key_heads");
    }
  } else {
    for (LayerType t : c.layer_types) {
      if (t != LayerType::kFullAttention) {
        return FieldError(source, "layer_types", "of a qwen3 model must all be full_attention");
      }
    }
  }

  auto quant = config.find("quantization_config");
  if (quant != config.end() && quant->is_object()) {
    auto method = quant->find("quant_method");
    const std::string name =
        method != quant->end() && method->is_string() ? method->get<std::string>() : "";
    if (name != "exl3") {
      return absl::UnimplementedError(absl::StrFormat(
          "%s: quantization_config.quant_method \"%s\" is not supported (only exl3)", source,
          name));
    }
    c.exl3 = true;
  }
  return c;
}

absl::StatusOr<TargetConfig> LoadTargetConfig(const std::string& dir) {
  const std::string path = dir + "/config.json";
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrFormat("cannot open %s", path));
  json config = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return absl::InvalidArgumentError(path + ": not valid JSON");
  return ParseTargetConfig(config, path);
}

}  // namespace twinspan::target
