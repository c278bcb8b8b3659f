#include "kernels/cpu/mask_logits.h"

#include <algorithm>
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
  constexpr float kNever = -std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    float* row = logits + r * stride;
    const uint32_t* mask = allowed + r * words;
    // Word by word: a grammar's mask is mostly all-clear or all-set words.
    for (int64_t w = 0; w < words; ++w) {
      const uint32_t bits = mask[w];
      const int64_t first = w * 32;
      const int64_t n = std::min<int64_t>(32, vocab - first);
      if (bits == ~0u) continue;
      if (bits == 0u) {
        std::fill_n(row + first, n, kNever);
        continue;
      }
      for (int64_t b = 0; b < n; ++b) {
        if (((bits >> b) & 1u) == 0) row[first + b] = kNever;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
