// Synthetic Qwen3.5-family (model_type qwen3_5) EXL3 checkpoints in the layout of an exllamav3
// conversion of Qwen3.8-27B: the multimodal wrapper config with text_config and
// quantization_config, the text model under `model.language_model.`, lm_head at the root, every
// quantized linear as trellis / suh / svh (+ codebook marker), and embeddings, norms, conv1d,
// A_log, dt_bias and in_proj_a/b as plain tensors. Vision tower and MTP tensors are not written.
#ifndef TWINSPAN_TOOLS_SYNTH_QWEN35_PRESET_H_
#define TWINSPAN_TOOLS_SYNTH_QWEN35_PRESET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/exl3/format.h"
#include "tools/synth/tensor_spec.h"

namespace twinspan::synth {

// The text model's sizes; Qwen38_27B() gives the real ones (shared/reference/qwen3.8-27b-configs.md
// section 1.2).
struct Qwen35Shape {
  int64_t vocab = 0;
  int64_t hidden = 0;
  int64_t intermediate = 0;
  int64_t layers = 0;
  int64_t full_attention_interval = 4;  // Layer i is full attention when i % 4 == 3.
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t linear_key_heads = 0;
  int64_t linear_value_heads = 0;
  int64_t linear_key_dim = 0;
  int64_t linear_value_dim = 0;
  int64_t conv_kernel = 4;
  std::vector<int64_t> mrope_section;  // Sums to head_dim / 8 (partial_rotary_factor 0.25).
};

Qwen35Shape Qwen38_27B();
// The same structure at test size: 8 layers (2 full attention), hidden 256, vocab 4096.
Qwen35Shape Qwen38Tiny();

struct Exl3Options {
  double bits = 3.5;  // Body average: floor(bits) and floor(bits) + 1 per linear group.
  int head_bits = 6;  // lm_head's K; 16 writes an fp16 lm_head.weight instead.
  exl3::Codebook codebook = exl3::Codebook::kMul1;
};

// config.json (keys sorted, as Hugging Face writes them), generation_config.json and the tensors.
// Token ids keep their distance from the end of the vocabulary (eos 248046 is vocab - 274).
// InvalidArgument for bits outside [1, 8], head_bits not in 1..8 or 16, or sizes that are not
// multiples of 128 where EXL3 needs them.
absl::StatusOr<CheckpointSpec> Qwen35Checkpoint(const Qwen35Shape& shape,
                                                const Exl3Options& options);

}  // namespace twinspan::synth

#endif  // TWINSPAN_TOOLS_SYNTH_QWEN35_PRESET_H_
