// Host side of RoPE: validation and one grid-stride launch.
#include "absl/strings/str_format.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/rope_kernel.cuh"

namespace twinspan::cuda {

absl::Status Rope(const Context& ctx, float* x, int64_t x_stride, int64_t rows, int64_t heads,
                  int64_t head_dim, int64_t rot_dim, const float* cos, const float* sin) {
  namespace rk = rope_kernel;
  if (rot_dim <= 0 || rot_dim % 2 != 0 || rot_dim > head_dim || heads <= 0 || rows < 0 ||
      x_stride < heads * head_dim) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Rope: rows %d, heads %d, head_dim %d, rot_dim %d, x_stride %d", rows,
                        heads, head_dim, rot_dim, x_stride));
  }
  if (rows == 0) return absl::OkStatus();
  if (x == nullptr || cos == nullptr || sin == nullptr) {
    return absl::InvalidArgumentError("Rope: x, cos and sin must not be null");
  }
  const rk::Params p{x, x_stride, rows, heads, head_dim, rot_dim / 2, cos, sin};
  LaunchPdl(&rk::RopeKernel, GridStrideBlocks(rows * heads * (rot_dim / 2), rk::kThreads),
            rk::kThreads, 0, ctx.stream, p);
  return LaunchStatus("Rope launch");
}

}  // namespace twinspan::cuda
