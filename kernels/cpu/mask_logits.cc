#include "kernels/cpu/mask_logits.h"

#include <limits>

#include "absl/strings/str_format.h"

namespace twinspan::cpu {

absl::Status MaskLogits(const Context& ctx, float* logits, int64_t stride, int64_t vocab,
                        const uint32_t* allowed, int64_t rows) {
  (void)ctx;  // One pass over the row: too little work to spread.
  if (vocab < 1 || stride < vocab || rows < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MaskLogits: vocab %d, stride %d, rows %d", vocab, stride, rows));
  }
  if (rows == 0) return absl::OkStatus();
  if (logits == nullptr || allowed == nullptr) {
    return absl::InvalidArgumentError("MaskLogits: logits and allowed must not be null");
  }
  const int64_t words = MaskWords(vocab);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = logits + r * stride;
    const uint32_t* mask = allowed + r * words;
    for (int64_t i = 0; i < vocab; ++i) {
      if (((mask[i / 32] >> (i % 32)) & 1u) == 0) row[i] = -std::numeric_limits<float>::infinity();
    }
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
