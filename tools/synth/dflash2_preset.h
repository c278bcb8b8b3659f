// Synthetic DFlash2 drafter checkpoints in the layout of z-lab/Qwen3.8-27B-DFlash2: its
// config.json (for the real sizes, the published 1,239 bytes) and its 81 tensors, bf16 random, or
// with every linear pre-quantized to Q4 (kernels/cpu/q4_linear.h).
#ifndef TWINSPAN_TOOLS_SYNTH_DFLASH2_PRESET_H_
#define TWINSPAN_TOOLS_SYNTH_DFLASH2_PRESET_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/synth/tensor_spec.h"

namespace twinspan::synth {

// Qwen38_27BDFlash2() gives shared/reference/qwen3.8-27b-configs.md section 2's values.
struct DFlash2Shape {
  int64_t vocab = 0;
  int64_t hidden = 0;
  int64_t intermediate = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t block_size = 8;
  int64_t mask_token_id = 0;
  int64_t eos_token_id = 0;  // Also pad_token_id.
  std::vector<int64_t> target_layer_ids;
  int64_t num_target_layers = 0;
  int64_t conv_kernel = 2;
  int64_t conv_group = 16;
  int64_t selector_rank = 0;
  int64_t selector_top_k = 0;
  int64_t sliding_window = 2048;
};

DFlash2Shape Qwen38_27BDFlash2();
// The same structure (5 layers, 81 tensors) at test size, for Qwen38Tiny's 8-layer target.
DFlash2Shape Qwen38TinyDFlash2();

// `linear_bits` 16 writes bf16 `.weight` linears; 4 writes `.q4_codes` / `.q4_scales` /
// `.q4_offsets` instead for every linear but fc (codebooks, norms and fc stay bf16).
// InvalidArgument for other bits, or a Q4 linear whose in_features is not a multiple of 128.
absl::StatusOr<CheckpointSpec> DFlash2Checkpoint(const DFlash2Shape& shape, int linear_bits);

}  // namespace twinspan::synth

#endif  // TWINSPAN_TOOLS_SYNTH_DFLASH2_PRESET_H_
