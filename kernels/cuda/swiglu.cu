// Host side of SwiGLU: validation and one grid-stride launch.
#include "absl/strings/str_format.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/swiglu.cuh"
#include "kernels/cuda/swiglu_kernel.cuh"

namespace twinspan::cuda {

absl::Status SwiGlu(const Context& ctx, const float* gate, const float* up, int64_t in_stride,
                    int64_t rows, int64_t dim, float* out, int64_t out_stride) {
  namespace sk = swiglu_kernel;
  if (dim <= 0 || rows < 0 || in_stride < dim || out_stride < dim) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SwiGlu: rows %d, dim %d, in_stride %d, out_stride %d", rows, dim, in_stride, out_stride));
  }
  if (rows == 0) return absl::OkStatus();
  if (gate == nullptr || up == nullptr || out == nullptr) {
    return absl::InvalidArgumentError("SwiGlu: gate, up and out must not be null");
  }
  const sk::SwiGluParams p{gate, up, in_stride, rows, dim, out, out_stride};
  LaunchPdl(&sk::SwiGluKernel, GridStrideBlocks(rows * dim, sk::kThreads), sk::kThreads, 0,
            ctx.stream, p);
  return LaunchStatus("SwiGlu launch");
}

}  // namespace twinspan::cuda
