#include "kernels/cpu/causal_conv1d.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"

namespace twinspan::cpu {

absl::Status CausalConv1d(const Context& ctx, const float* x, int64_t rows, int64_t channels,
                          const float* weight, int64_t kernel, float* conv_state, float* y) {
  if (rows < 0 || channels <= 0 || kernel < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("CausalConv1d: rows %d, channels %d, kernel %d", rows, channels, kernel));
  }
  const int64_t history = kernel - 1;
  // A channel costs rows * kernel flops; 64 channels a task keeps the pool's overhead small.
  ParallelFor(ctx.pool, channels, 64, [&](int64_t c0, int64_t c1) {
    std::vector<float> window(kernel);
    for (int64_t c = c0; c < c1; ++c) {
      for (int64_t j = 0; j < history; ++j) window[j] = conv_state[j * channels + c];
      const float* w = weight + c * kernel;
      for (int64_t t = 0; t < rows; ++t) {
        window[history] = x[t * channels + c];
        float sum = 0.0f;
        for (int64_t j = 0; j < kernel; ++j) sum += w[j] * window[j];
        y[t * channels + c] = sum / (1.0f + std::exp(-sum));
        for (int64_t j = 0; j < history; ++j) window[j] = window[j + 1];
      }
      for (int64_t j = 0; j < history; ++j) conv_state[j * channels + c] = window[j];
    }
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
