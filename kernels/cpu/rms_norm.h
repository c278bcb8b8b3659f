// RMSNorm over the last dimension: y = w * (x / sqrt(mean(x^2) + eps)), as HF Qwen3RMSNorm.
// Zero-centred norms (Qwen3.5's `(1 + w)`) pass 1 + w, computed once at load.
#ifndef TWINSPAN_KERNELS_CPU_RMS_NORM_H_
#define TWINSPAN_KERNELS_CPU_RMS_NORM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

// Normalizes `rows` vectors of `dim` floats: x row r starts at x + r * x_stride, y row r at
// y + r * y_stride; y may equal x (in place). `weight` has dim floats. Row-invariant (the sum of
// squares uses Dot's fixed order). InvalidArgument for dim <= 0, rows < 0, a stride below dim, or
// eps < 0.
absl::Status RmsNorm(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                     int64_t dim, const float* weight, float eps, float* y, int64_t y_stride);

// Packed-rows form.
inline absl::Status RmsNorm(const Context& ctx, const float* x, int64_t rows, int64_t dim,
                            const float* weight, float eps, float* y) {
  return RmsNorm(ctx, x, dim, rows, dim, weight, eps, y, dim);
}

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_RMS_NORM_H_
