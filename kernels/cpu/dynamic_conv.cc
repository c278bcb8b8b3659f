#include "kernels/cpu/dynamic_conv.h"

#include <cstdint>

#include "common/status.h"
#include "kernels/cpu/dynamic_conv_check.h"

namespace twinspan::cpu {

absl::Status DynamicConv(const Context& ctx, std::span<float> out, std::span<const float> x,
                         std::span<const float> base, std::span<const float> dynamic,
                         const DynamicConvParams& params) {
  ABSL_RETURN_IF_ERROR(CheckDynamicConv(out, x, base, dynamic, params));
  const int64_t rows = params.rows, h = params.channels, kc = params.taps, g = params.group_size;
  const int64_t groups = h / g;
  ParallelFor(ctx.pool, rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      float* o_row = out.data() + t * h;
      for (int64_t c = 0; c < h; ++c) o_row[c] = 0.0f;
      const float* d_row = dynamic.data() + t * params.dynamic_row_stride;
      for (int64_t o = 0; o < kc && o <= t; ++o) {
        const float* x_row = x.data() + (t - o) * h;
        const float* b_row = base.data() + o * h;
        const float* d_tap = d_row + o * groups;
        // Same two steps as the reference: add base * x, then dynamic * x.
        for (int64_t c = 0; c < h; ++c) {
          o_row[c] += b_row[c] * x_row[c];
          o_row[c] += d_tap[c / g] * x_row[c];
        }
      }
    }
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
