// Host side of CausalConv1dKeep: validation and the launch. Device code: causal_conv1d_kernel.cuh.
#include <cstdint>

#include "absl/strings/str_format.h"
#include "kernels/cpu/state_overlap.h"
#include "kernels/cuda/causal_conv1d_keep.cuh"
#include "kernels/cuda/causal_conv1d_kernel.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda {

namespace ck = causal_conv1d_kernel;

absl::Status CausalConv1dKeep(const Context& ctx, const CausalConv1dWindow& window,
                              int64_t channels, const float* weight, int64_t kernel) {
  const int64_t rows = window.rows;
  if (rows < 0 || channels <= 0 || kernel < 1 || kernel > (1 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("CausalConv1dKeep: rows %d, channels %d, kernel %d (kernel 1..2^20)", rows,
                        channels, kernel));
  }
  if (window.keep_rows < 0 || window.keep_rows > rows) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "CausalConv1dKeep: keep_rows %d is outside [0, rows = %d]", window.keep_rows, rows));
  }
  const int64_t state_floats = (kernel - 1) * channels;
  if (weight == nullptr || (rows > 0 && window.x == nullptr) ||
      (state_floats > 0 && window.state_in == nullptr)) {
    return absl::InvalidArgumentError(
        "CausalConv1dKeep: weight, x (rows > 0) and state_in (kernel > 1) must be device pointers");
  }
  if (state_floats > 0 && window.state_out != nullptr &&
      cpu::StatesPartlyOverlap(window.state_in, window.state_out, state_floats)) {
    return absl::InvalidArgumentError(
        "CausalConv1dKeep: state_out overlaps state_in without being equal to it");
  }
  const bool state_changes = state_floats > 0 && window.state_out != nullptr &&
                             (window.state_out != window.state_in || window.keep_rows > 0);
  const bool computes_y = rows > 0 && window.y != nullptr;
  if (!state_changes && !computes_y) return absl::OkStatus();

  ck::Params p{};
  p.x = window.x;
  p.rows = rows;
  p.channels = channels;
  p.weight = weight;
  p.kernel = static_cast<int>(kernel);
  p.rows_per_run = kernel - 1 > ck::kRowsPerRun ? kernel - 1 : ck::kRowsPerRun;
  // Keep the grid's y extent within 65,535 runs.
  if ((rows + p.rows_per_run - 1) / p.rows_per_run > 65535) p.rows_per_run = (rows + 65534) / 65535;
  p.state_in = window.state_in;
  p.keep_rows = window.keep_rows;
  p.state_out = state_floats > 0 ? window.state_out : nullptr;
  p.y = window.y;
  const int64_t runs = computes_y ? (rows + p.rows_per_run - 1) / p.rows_per_run : 1;
  const dim3 grid(static_cast<unsigned>((channels + ck::kThreads - 1) / ck::kThreads),
                  static_cast<unsigned>(runs));
  if (kernel == 4) {
    LaunchPdl(&ck::CausalConv1dKernel<4>, grid, ck::kThreads, 0, ctx.stream, p);
  } else {
    LaunchPdl(&ck::CausalConv1dKernel<0>, grid, ck::kThreads, 0, ctx.stream, p);
  }
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    return absl::InternalError(
        absl::StrFormat("CausalConv1dKeep: launch failed: %s", cudaGetErrorString(e)));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cuda
