#include "kernels/cpu/rms_norm.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "kernels/cpu/dot.h"

namespace twinspan::cpu {

absl::Status RmsNorm(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                     int64_t dim, const float* weight, float eps, float* y, int64_t y_stride) {
  if (dim <= 0 || rows < 0 || x_stride < dim || y_stride < dim || !(eps >= 0.0f)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("RmsNorm: rows %d, dim %d, x_stride %d, y_stride %d, eps %g", rows, dim,
                        x_stride, y_stride, eps));
  }
  // One row is ~dim flops; batch 64 rows per task so small norms do not pay for the pool.
  ParallelFor(ctx.pool, rows, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * x_stride;
      float* yr = y + r * y_stride;
      const float mean_square = Dot(xr, xr, dim) / static_cast<float>(dim);
      const float inv_rms = 1.0f / std::sqrt(mean_square + eps);
      for (int64_t i = 0; i < dim; ++i) yr[i] = weight[i] * (xr[i] * inv_rms);
    }
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
