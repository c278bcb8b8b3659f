#include "kernels/cpu/causal_conv1d.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernels/cpu/tree_rows.h"

namespace twinspan::cpu {
namespace {

absl::Status CheckShape(const char* op, int64_t rows, int64_t channels, int64_t kernel) {
  if (rows < 0 || channels <= 0 || kernel < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: rows %d, channels %d, kernel %d", op, rows, channels, kernel));
  }
  return absl::OkStatus();
}

// silu(sum_j w[j] * window[j]), summed in j order: the one formula both ops use.
float ConvOutput(const float* w, const float* window, int64_t kernel) {
  float sum = 0.0f;
  for (int64_t j = 0; j < kernel; ++j) sum += w[j] * window[j];
  return sum / (1.0f + std::exp(-sum));
}

}  // namespace

absl::Status CausalConv1d(const Context& ctx, const float* x, int64_t rows, int64_t channels,
                          const float* weight, int64_t kernel, float* conv_state, float* y) {
  if (absl::Status s = CheckShape("CausalConv1d", rows, channels, kernel); !s.ok()) return s;
  const int64_t history = kernel - 1;
  // A channel costs rows * kernel flops; 64 channels a task keeps the pool's overhead small.
  ParallelFor(ctx.pool, channels, 64, [&](int64_t c0, int64_t c1) {
    std::vector<float> window(kernel);
    for (int64_t c = c0; c < c1; ++c) {
      for (int64_t j = 0; j < history; ++j) window[j] = conv_state[j * channels + c];
      const float* w = weight + c * kernel;
      for (int64_t t = 0; t < rows; ++t) {
        window[history] = x[t * channels + c];
        y[t * channels + c] = ConvOutput(w, window.data(), kernel);
        for (int64_t j = 0; j < history; ++j) window[j] = window[j + 1];
      }
      for (int64_t j = 0; j < history; ++j) conv_state[j * channels + c] = window[j];
    }
  });
  return absl::OkStatus();
}

absl::Status CausalConv1dTree(const Context& ctx, const float* x, const int32_t* parents,
                              int64_t rows, int64_t channels, const float* weight, int64_t kernel,
                              const float* conv_state, float* y) {
  if (absl::Status s = CheckShape("CausalConv1dTree", rows, channels, kernel); !s.ok()) return s;
  if (absl::Status s = CheckTreeParents("CausalConv1dTree", parents, rows); !s.ok()) return s;
  // source[r * kernel + j]: the row whose input fills window slot j of row r, or -1 - i for
  // state row i; walked once along the parents, shared by every channel.
  std::vector<int64_t> source(rows * kernel);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t node = r, on_path = 0;  // Path rows fill the window from its newest slot down.
    for (int64_t j = kernel - 1; j >= 0; --j) {
      if (node >= 0) {
        source[r * kernel + j] = node;
        node = parents[node];
        ++on_path;
      } else {  // Before the root: the state's rows, its newest (kernel - 2) first.
        source[r * kernel + j] = -1 - (on_path - 1 + j);
      }
    }
  }
  ParallelFor(ctx.pool, channels, 64, [&](int64_t c0, int64_t c1) {
    std::vector<float> window(kernel);
    for (int64_t c = c0; c < c1; ++c) {
      const float* w = weight + c * kernel;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < kernel; ++j) {
          const int64_t src = source[r * kernel + j];
          window[j] = src >= 0 ? x[src * channels + c] : conv_state[(-1 - src) * channels + c];
        }
        y[r * channels + c] = ConvOutput(w, window.data(), kernel);
      }
    }
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
