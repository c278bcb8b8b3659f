// Host side of CausalConv1d: the twin of cpu::CausalConv1d, one CausalConv1dKeep window.
#include "absl/strings/str_format.h"
#include "kernels/cuda/causal_conv1d.cuh"
#include "kernels/cuda/causal_conv1d_keep.cuh"

namespace twinspan::cuda {

absl::Status CausalConv1d(const Context& ctx, const float* x, int64_t rows, int64_t channels,
                          const float* weight, int64_t kernel, const float* state_in,
                          float* state_out, float* y) {
  if (rows < 0 || channels <= 0 || kernel < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("CausalConv1d: rows %d, channels %d, kernel %d", rows, channels, kernel));
  }
  if ((rows > 0 && y == nullptr) || (kernel > 1 && state_out == nullptr)) {
    return absl::InvalidArgumentError("CausalConv1d: y and state_out must be device pointers");
  }
  CausalConv1dWindow window;
  window.x = x;
  window.rows = rows;
  window.state_in = state_in;
  window.keep_rows = rows;
  window.state_out = state_out;
  window.y = y;
  return CausalConv1dKeep(ctx, window, channels, weight, kernel);
}

}  // namespace twinspan::cuda
