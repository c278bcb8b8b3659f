// Host side of GatedDeltaNetGates: validation and the launch. Device code:
// gated_delta_net_gates_kernel.cuh.
#include <algorithm>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "kernels/cuda/gated_delta_net_gates.cuh"
#include "kernels/cuda/gated_delta_net_gates_kernel.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda {

absl::Status GatedDeltaNetGates(const Context& ctx, const float* a, const float* b,
                                int64_t ab_stride, int64_t rows, int64_t v_heads,
                                const float* a_log, const float* dt_bias, float* g, float* beta) {
  if (rows < 0 || v_heads <= 0 || v_heads > (1 << 30) || ab_stride < v_heads) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GatedDeltaNetGates: rows %d, v_heads %d, ab_stride %d", rows, v_heads, ab_stride));
  }
  if (rows == 0) return absl::OkStatus();
  if (!a || !b || !a_log || !dt_bias || !g || !beta) {
    return absl::InvalidArgumentError(
        "GatedDeltaNetGates: a, b, a_log, dt_bias, g and beta must be device pointers");
  }
  namespace gk = gdn_gates_kernel;
  const int64_t n = rows * v_heads;
  const int64_t blocks = std::min<int64_t>((n + gk::kThreads - 1) / gk::kThreads, 1 << 16);
  LaunchPdl(&gk::GatesKernel, static_cast<unsigned>(blocks), gk::kThreads, 0, ctx.stream, a, b,
            ab_stride, n, static_cast<int>(v_heads), a_log, dt_bias, g, beta);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    return absl::InternalError(
        absl::StrFormat("GatedDeltaNetGates: launch failed: %s", cudaGetErrorString(e)));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cuda
