// Host side of MulSigmoid: validation and one grid-stride launch.
#include "absl/strings/str_format.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/mul_sigmoid.cuh"
#include "kernels/cuda/mul_sigmoid_kernel.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda {

absl::Status MulSigmoid(const Context& ctx, float* x, int64_t x_stride, const float* gate,
                        int64_t gate_stride, int64_t rows, int64_t dim) {
  namespace mk = mul_sigmoid_kernel;
  if (dim <= 0 || rows < 0 || x_stride < dim || gate_stride < dim) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MulSigmoid: rows %d, dim %d, x_stride %d, gate_stride %d", rows, dim,
                        x_stride, gate_stride));
  }
  if (rows == 0) return absl::OkStatus();
  if (x == nullptr || gate == nullptr) {
    return absl::InvalidArgumentError("MulSigmoid: x and gate must not be null");
  }
  const mk::MulSigmoidParams p{x, x_stride, gate, gate_stride, rows, dim};
  LaunchPdl(&mk::MulSigmoidKernel, GridStrideBlocks(rows * dim, mk::kThreads), mk::kThreads, 0,
            ctx.stream, p);
  return LaunchStatus("MulSigmoid launch");
}

}  // namespace twinspan::cuda
