// Host side of CausalConv1dTree: the CPU op's checks, the kernel's limits, one launch.
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cpu/tree_rows.h"
#include "kernels/cuda/causal_conv1d_tree.cuh"
#include "kernels/cuda/causal_conv1d_tree_kernel.cuh"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda {

absl::Status CausalConv1dTree(const Context& ctx, const float* x, const int32_t* parents,
                              int64_t rows, int64_t channels, const float* weight, int64_t kernel,
                              const float* state, float* y) {
  namespace ck = causal_conv1d_kernel;
  if (rows < 0 || channels <= 0 || kernel < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "CausalConv1dTree: rows %d, channels %d, kernel %d", rows, channels, kernel));
  }
  ABSL_RETURN_IF_ERROR(cpu::CheckTreeParents("CausalConv1dTree", parents, rows));
  if (rows > ck::kMaxTreeRows || kernel > ck::kMaxTreeKernel) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "CausalConv1dTree: %d rows (at most %d) or kernel %d (at most %d) exceed the CUDA op", rows,
        ck::kMaxTreeRows, kernel, ck::kMaxTreeKernel));
  }
  if (x == nullptr || weight == nullptr || y == nullptr || (kernel > 1 && state == nullptr)) {
    return absl::InvalidArgumentError(
        "CausalConv1dTree: x, weight, state and y must be device pointers");
  }
  ck::TreeParams p;
  p.x = x;
  p.channels = channels;
  p.weight = weight;
  p.kernel = static_cast<int>(kernel);
  p.state = state;
  p.y = y;
  for (int64_t r = 0; r < rows; ++r) p.parents.v[r] = static_cast<int16_t>(parents[r]);
  const dim3 grid(static_cast<unsigned>((channels + ck::kThreads - 1) / ck::kThreads),
                  static_cast<unsigned>(rows));
  LaunchPdl(&ck::CausalConv1dTreeKernel, grid, ck::kThreads, 0, ctx.stream, p);
  return LaunchStatus("CausalConv1dTree launch");
}

}  // namespace twinspan::cuda
