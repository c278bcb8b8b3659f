#include "kernels/cpu/rope.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace twinspan::cpu {

absl::Status RopeAngles(const int64_t* positions, int64_t rows, int64_t rot_dim, double theta,
                        float* cos, float* sin) {
  if (rot_dim <= 0 || rot_dim % 2 != 0 || !(theta > 0.0) || rows < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("RopeAngles: rot_dim %d, theta %g, rows %d", rot_dim, theta, rows));
  }
  const int64_t half = rot_dim / 2;
  const float theta_f = static_cast<float>(theta);
  for (int64_t r = 0; r < rows; ++r) {
    if (positions[r] < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("RopeAngles: negative position %d at row %d", positions[r], r));
    }
    const float position = static_cast<float>(positions[r]);
    for (int64_t i = 0; i < half; ++i) {
      const float exponent = static_cast<float>(2 * i) / static_cast<float>(rot_dim);
      const float inv_freq =
          1.0f / static_cast<float>(std::pow(static_cast<double>(theta_f), exponent));
      const float angle = position * inv_freq;
      cos[r * half + i] = static_cast<float>(std::cos(static_cast<double>(angle)));
      sin[r * half + i] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  }
  return absl::OkStatus();
}

absl::Status Rope(const Context& ctx, float* x, int64_t x_stride, int64_t rows, int64_t heads,
                  int64_t head_dim, int64_t rot_dim, const float* cos, const float* sin) {
  if (rot_dim <= 0 || rot_dim % 2 != 0 || rot_dim > head_dim || heads <= 0 || rows < 0 ||
      x_stride < heads * head_dim) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Rope: rows %d, heads %d, head_dim %d, rot_dim %d, x_stride %d", rows,
                        heads, head_dim, rot_dim, x_stride));
  }
  const int64_t half = rot_dim / 2;
  ParallelFor(ctx.pool, rows, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* c = cos + r * half;
      const float* s = sin + r * half;
      for (int64_t h = 0; h < heads; ++h) {
        float* xh = x + r * x_stride + h * head_dim;
        for (int64_t i = 0; i < half; ++i) {
          const float a = xh[i], b = xh[i + half];
          xh[i] = a * c[i] - b * s[i];
          xh[i + half] = b * c[i] + a * s[i];
        }
      }
    }
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
