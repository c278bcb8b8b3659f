// A DFlash / DFlash2 drafter's shape, parsed once from its config.json (a Qwen3Config plus
// `dflash_config`). Both published spellings are accepted: block_size at the top level or in
// dflash_config, rope_theta at the top level or in rope_parameters, is_causal present or absent.
#ifndef TWINSPAN_COMMON_CONFIG_DRAFTER_CONFIG_H_
#define TWINSPAN_COMMON_CONFIG_DRAFTER_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace twinspan::drafter {

enum class DrafterKind {
  kDFlash,   // DFlashDraftModel: KV-injected block decoder.
  kDFlash2,  // DFlash2DraftModel: + dynamic convs around each sublayer + candidate selector.
};

// How one draft layer's block queries see keys (the reference's per-layer rule).
struct LayerAttention {
  bool causal = false;         // Causal inside the block; sliding layers default to true.
  int64_t sliding_window = 0;  // 0: none; sliding_attention layers use config.sliding_window.
};

// Plain value; derived sizes are computed once by the parser.
struct DrafterConfig {
  DrafterKind kind = DrafterKind::kDFlash;
  int64_t vocab_size = 0;   // V: must equal the target's.
  int64_t hidden_size = 0;  // H: the target's width too (fc reads n_f * H).
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  float rms_norm_eps = 1e-6f;
  double rope_theta = 10000.0;
  std::vector<LayerAttention> layers;  // num_layers entries.

  int64_t block_size = 16;                // B the checkpoint was trained at (reference default 16).
  int32_t mask_token_id = 0;              // Embedding row of every MASK slot.
  std::vector<int64_t> target_layer_ids;  // Taps: output of target layer i (HF hidden_states[i+1]).
  float input_embedding_scale = 1.0f;
  float output_multiplier = 1.0f;
  float final_logit_softcapping = 0.0f;  // 0: none.

  // Head variants the checkpoint names (config.json "head_variants": {"two-span": "0:6144,..."}):
  // its own spans, chosen from its training text, in place of the Qwen3.8-27B defaults.
  std::map<std::string, std::string> head_variants;

  // DFlash2 only (zero for DFlash).
  int64_t conv_kernel_size = 0;  // Kc
  int64_t conv_group_size = 0;   // g
  int64_t selector_rank = 0;     // r
  int64_t selector_top_k = 0;    // k

  int64_t num_taps() const { return static_cast<int64_t>(target_layer_ids.size()); }  // n_f
  int64_t conv_groups() const { return conv_group_size > 0 ? hidden_size / conv_group_size : 0; }
};

// Parses an HF drafter config object; `source` names it in errors. The kind comes from
// `architectures` (DFlashDraftModel / DFlash2DraftModel). InvalidArgument naming the field for a
// missing or bad value, an unknown architecture, or inconsistent sizes (heads not dividing,
// hidden not a multiple of conv_group_size, mask id outside the vocabulary, block_size < 2).
absl::StatusOr<DrafterConfig> ParseDrafterConfig(const nlohmann::json& config,
                                                 const std::string& source);

// Reads and parses <dir>/config.json. NotFound / InvalidArgument naming the file.
absl::StatusOr<DrafterConfig> LoadDrafterConfig(const std::string& dir);

}  // namespace twinspan::drafter

#endif  // TWINSPAN_COMMON_CONFIG_DRAFTER_CONFIG_H_
