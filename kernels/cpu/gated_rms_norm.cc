#include "kernels/cpu/gated_rms_norm.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace twinspan::cpu {

absl::Status GatedRmsNorm(const Context& ctx, const float* x, const float* gate, int64_t groups,
                          int64_t dim, const float* weight, float eps, float* y) {
  if (groups < 0 || dim <= 0 || !(eps >= 0.0f)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("GatedRmsNorm: groups %d, dim %d, eps %g", groups, dim, eps));
  }
  ParallelFor(ctx.pool, groups, 16, [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g) {
      const float* xg = x + g * dim;
      const float* zg = gate + g * dim;
      float* yg = y + g * dim;
      float sum_sq = 0.0f;
      for (int64_t i = 0; i < dim; ++i) sum_sq += xg[i] * xg[i];
      const float inv_rms = 1.0f / std::sqrt(sum_sq / static_cast<float>(dim) + eps);
      for (int64_t i = 0; i < dim; ++i) {
        const float z = zg[i];
        yg[i] = weight[i] * (xg[i] * inv_rms) * (z / (1.0f + std::exp(-z)));
      }
    }
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
