#include "kernels/cpu/swiglu.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace twinspan::cpu {

absl::Status SwiGlu(const Context& ctx, const float* gate, const float* up, int64_t in_stride,
                    int64_t rows, int64_t dim, float* out, int64_t out_stride) {
  if (dim <= 0 || rows < 0 || in_stride < dim || out_stride < dim) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SwiGlu: rows %d, dim %d, in_stride %d, out_stride %d", rows, dim, in_stride, out_stride));
  }
  ParallelFor(ctx.pool, rows, 4, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* g = gate + r * in_stride;
      const float* u = up + r * in_stride;
      float* o = out + r * out_stride;
      for (int64_t i = 0; i < dim; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    }
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
