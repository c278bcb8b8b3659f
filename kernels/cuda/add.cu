// Host side of Add: validation and one grid-stride launch.
#include "absl/strings/str_format.h"
#include "kernels/cuda/add.cuh"
#include "kernels/cuda/add_kernel.cuh"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda {

absl::Status Add(const Context& ctx, const float* a, const float* b, int64_t n, float* out) {
  namespace ak = add_kernel;
  if (n < 0) return absl::InvalidArgumentError(absl::StrFormat("Add: n %d", n));
  if (n == 0) return absl::OkStatus();
  if (a == nullptr || b == nullptr || out == nullptr) {
    return absl::InvalidArgumentError("Add: a, b and out must not be null");
  }
  LaunchPdl(&ak::AddKernel, GridStrideBlocks(n, ak::kThreads), ak::kThreads, 0, ctx.stream, a, b, n,
            out);
  return LaunchStatus("Add launch");
}

}  // namespace twinspan::cuda
