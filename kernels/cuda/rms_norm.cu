// Host side of RMSNorm: validation and the launch of the path (and register tile) dim selects.
#include "absl/strings/str_format.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/rms_norm_kernel.cuh"

namespace twinspan::cuda {

absl::Status RmsNorm(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                     int64_t dim, const float* weight, float eps, float* y, int64_t y_stride) {
  namespace rk = rms_norm_kernel;
  if (dim <= 0 || rows < 0 || x_stride < dim || y_stride < dim || !(eps >= 0.0f)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("RmsNorm: rows %d, dim %d, x_stride %d, y_stride %d, eps %g", rows, dim,
                        x_stride, y_stride, eps));
  }
  if (rows == 0) return absl::OkStatus();
  if (x == nullptr || y == nullptr || weight == nullptr) {
    return absl::InvalidArgumentError("RmsNorm: x, weight and y must not be null");
  }
  const rk::Params p{x, x_stride, rows, dim, weight, eps, y, y_stride};
  const unsigned row_blocks = static_cast<unsigned>(rows);
  if (dim <= rk::kWarpDimLimit) {
    static_assert(rk::kWarpDimLimit <= 32 * 32);
    const unsigned blocks =
        static_cast<unsigned>((rows + rk::kRowsPerWarpBlock - 1) / rk::kRowsPerWarpBlock);
    if (dim <= 32 * 8) {
      LaunchPdl(&rk::WarpRowKernel<8>, blocks, rk::kBlockThreads, 0, ctx.stream, p);
    } else {
      LaunchPdl(&rk::WarpRowKernel<32>, blocks, rk::kBlockThreads, 0, ctx.stream, p);
    }
  } else if (dim <= rk::kBlockThreads * 8) {
    LaunchPdl(&rk::CachedBlockRowKernel<8>, row_blocks, rk::kBlockThreads, 0, ctx.stream, p);
  } else if (dim <= rk::kBlockThreads * 16) {
    LaunchPdl(&rk::CachedBlockRowKernel<16>, row_blocks, rk::kBlockThreads, 0, ctx.stream, p);
  } else if (dim <= rk::kMaxCachedDim) {
    LaunchPdl(&rk::CachedBlockRowKernel<32>, row_blocks, rk::kBlockThreads, 0, ctx.stream, p);
  } else {
    LaunchPdl(&rk::BlockRowKernel, row_blocks, rk::kBlockThreads, 0, ctx.stream, p);
  }
  return LaunchStatus("RmsNorm launch");
}

}  // namespace twinspan::cuda
