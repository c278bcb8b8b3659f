// What twinspan-quantize does with each tensor of a qwen3 / qwen3_5 HF checkpoint: which linears
// it quantizes (in forward order, with their K from the bit allocation), which it stores as fp16
// (Gated DeltaNet in_proj_a / in_proj_b, as exllamav3 does), and that everything else is copied.
#ifndef TWINSPAN_TOOLS_QUANTIZE_MODEL_PLAN_H_
#define TWINSPAN_TOOLS_QUANTIZE_MODEL_PLAN_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/target_config.h"
#include "common/exl3/bit_allocation.h"
#include "common/safetensors/checkpoint.h"

namespace twinspan::quantize {

struct PlannedLinear {
  std::string prefix;  // "model.layers.0.mlp.up_proj", "lm_head".
  std::string
      source;       // The tensor holding its HF weight [out, in] (the embedding for a tied head).
  int64_t in = 0;   // EXL3 k.
  int64_t out = 0;  // EXL3 n.
  int64_t layer = -1;  // -1: the head.
  int bits = 0;
  bool has_bias = false;  // <prefix>.bias exists; it becomes the EXL3 linear's F16 bias.

  int64_t numel() const { return in * out; }
};

struct ModelPlan {
  target::TargetConfig config;
  std::string text_prefix;  // "model." or "model.language_model."
  bool tied_head = false;   // The source has no lm_head weight: the head is cloned from embeddings.
  std::vector<PlannedLinear>
      linears;                   // Decoder linears in forward order, then lm_head if quantized.
  std::set<std::string> to_f16;  // Tensors rewritten as F16 (in_proj_a / in_proj_b weights).
  double average_bits = 0;       // Over the decoder linears (the head excluded).
  int head_bits = 16;

  // The planned linear whose prefix is `prefix`, or null.
  const PlannedLinear* Find(const std::string& prefix) const;
};

// Errors, each naming the checkpoint and the tensor: FailedPrecondition for a source that is
// already quantized (quantization_config); Unimplemented for a mixture-of-experts model or a
// linear whose sizes are not multiples of 128 (EXL3 would need padding); NotFound for a missing
// weight; InvalidArgument for a weight that is not F32 / F16 / BF16 or has the wrong shape, or bits
// outside 1..8.
absl::StatusOr<ModelPlan> PlanModel(const target::TargetConfig& config,
                                    const Checkpoint& checkpoint, double bits, int head_bits);

}  // namespace twinspan::quantize

#endif  // TWINSPAN_TOOLS_QUANTIZE_MODEL_PLAN_H_
