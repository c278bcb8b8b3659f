// Turns W [k, n] into the distribution the trellis codebooks fit (exl3-format.md section 5.3):
// per-output-channel RMS scales and random signs (sv), the output-side Hadamard, per-input-channel
// RMS scales and random signs over the codebook RMS (su), the input-side Hadamard.
#ifndef TWINSPAN_COMMON_EXL3_QUANTIZE_REGULARIZE_H_
#define TWINSPAN_COMMON_EXL3_QUANTIZE_REGULARIZE_H_

#include <cstdint>
#include <span>
#include <vector>

namespace twinspan::exl3::quantize {

// RMS of the codebooks' values (3inst's, applied to every codebook as exllamav3 does; the global
// scale absorbs the difference).
inline constexpr float kCodebookRms = 1.24371088f;

struct Regularized {
  std::vector<float> weight;  // [k, n]: B diag(1/su) W diag(1/sv_divisor) B.
  std::vector<float> su;      // [k]: sign * row RMS / -kCodebookRms (zero rows use RMS 0.1).
  std::vector<float> sv;      // [n]: sign (* column RMS / its mean with out scales); 0 for a zero
                              // column.
  std::vector<float> sv_divisor;  // [n]: what each column was divided by: sv, or sign * 0.1 for a
                                  // zero column (so the division stays finite).
};

// W [k, n] row-major; signs +-1 of length k (input side) and n (output side).
// REQUIRES: k and n multiples of 128, W finite.
Regularized Regularize(const float* w, int64_t k, int64_t n, std::span<const float> su_signs,
                       std::span<const float> sv_signs, bool out_scales);

// B diag(1/su) W diag(1/sv) B for given scales (the stored fp16 ones, so the stored tensors
// describe exactly what is quantized). REQUIRES: every su and sv nonzero.
std::vector<float> Rotate(const float* w, int64_t k, int64_t n, std::span<const float> su,
                          std::span<const float> sv);

}  // namespace twinspan::exl3::quantize

#endif  // TWINSPAN_COMMON_EXL3_QUANTIZE_REGULARIZE_H_
