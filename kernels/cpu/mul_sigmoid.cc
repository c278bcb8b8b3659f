#include "kernels/cpu/mul_sigmoid.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace twinspan::cpu {

absl::Status MulSigmoid(const Context& ctx, float* x, int64_t x_stride, const float* gate,
                        int64_t gate_stride, int64_t rows, int64_t dim) {
  if (rows < 0 || dim <= 0 || x_stride < dim || gate_stride < dim) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MulSigmoid: rows %d, dim %d, x_stride %d, gate_stride %d", rows, dim,
                        x_stride, gate_stride));
  }
  ParallelFor(ctx.pool, rows, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* xr = x + r * x_stride;
      const float* gr = gate + r * gate_stride;
      for (int64_t i = 0; i < dim; ++i) xr[i] = xr[i] * (1.0f / (1.0f + std::exp(-gr[i])));
    }
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
