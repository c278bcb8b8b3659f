// The target model's shape, parsed once from its config.json (HF layout; Qwen3.5 wrappers keep the
// text model under "text_config").
#ifndef TWINSPAN_COMMON_CONFIG_TARGET_CONFIG_H_
#define TWINSPAN_COMMON_CONFIG_TARGET_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace twinspan::target {

enum class TargetFamily { kQwen3, kQwen35 };

enum class LayerType {
  kFullAttention,    // Softmax attention over the KV cache.
  kLinearAttention,  // Gated DeltaNet: conv window + recurrent state (Qwen3.5).
};

// Plain value. Every field comes from config.json; derived sizes are computed once here.
struct TargetConfig {
  std::string model_type;  // "qwen3", "qwen3_5" or "qwen3_5_text" as written.
  TargetFamily family = TargetFamily::kQwen3;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  float rms_norm_eps = 1e-6f;
  double rope_theta = 10000.0;
  double partial_rotary_factor = 1.0;
  int64_t rotary_dim = 0;  // head_dim * partial_rotary_factor, even.
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  bool attn_output_gate = false;       // q_proj also yields a per-head sigmoid gate (Qwen3.5).
  std::vector<LayerType> layer_types;  // num_layers entries.

  // Gated DeltaNet (linear_attention layers); zero for Qwen3.
  int64_t linear_num_key_heads = 0;
  int64_t linear_num_value_heads = 0;
  int64_t linear_key_head_dim = 0;
  int64_t linear_value_head_dim = 0;
  int64_t linear_conv_kernel_dim = 0;

  int64_t num_experts = 0;  // > 0: a mixture-of-experts checkpoint.
  bool exl3 = false;        // quantization_config.quant_method == "exl3".
  std::vector<int64_t> eos_token_ids;

  bool is_moe() const { return num_experts > 0; }
};

// Parses an HF config object. `source` names it in errors. InvalidArgument naming the field for a
// missing or bad value, an unknown model_type, or inconsistent sizes (heads not dividing, odd
// rotary dims, layer_types of the wrong length); Unimplemented for an unsupported quant_method.
absl::StatusOr<TargetConfig> ParseTargetConfig(const nlohmann::json& config,
                                               const std::string& source);

// Reads and parses <dir>/config.json. NotFound / InvalidArgument naming the file.
absl::StatusOr<TargetConfig> LoadTargetConfig(const std::string& dir);

}  // namespace twinspan::target

#endif  // TWINSPAN_COMMON_CONFIG_TARGET_CONFIG_H_
