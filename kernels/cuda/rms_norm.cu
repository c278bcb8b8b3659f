// Host side of RMSNorm: validation and the launch of the path (and register tile) dim selects.
#include "absl/strings/str_format.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/rms_norm_kernel.cuh"

namespace twinspan::cuda {

namespace {

namespace rk = rms_norm_kernel;

absl::Status Launch(const Context& ctx, const char* op, const rk::Params& p) {
  if (p.dim <= 0 || p.rows < 0 || p.x_stride < p.dim || p.y_stride < p.dim || !(p.eps >= 0.0f)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: rows %d, dim %d, x_stride %d, y_stride %d, eps %g", op, p.rows, p.dim,
                        p.x_stride, p.y_stride, p.eps));
  }
  if (p.rows == 0) return absl::OkStatus();
  if (p.x == nullptr || p.y == nullptr || p.weight == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: x, weight and y must not be null", op));
  }
  const unsigned row_blocks = static_cast<unsigned>(p.rows);
  if (p.dim <= rk::kWarpDimLimit) {
    static_assert(rk::kWarpDimLimit <= 32 * 32);
    const unsigned blocks =
        static_cast<unsigned>((p.rows + rk::kRowsPerWarpBlock - 1) / rk::kRowsPerWarpBlock);
    if (p.dim <= 32 * 8) {
      LaunchPdl(&rk::WarpRowKernel<8>, blocks, rk::kBlockThreads, 0, ctx.stream, p);
    } else {
      LaunchPdl(&rk::WarpRowKernel<32>, blocks, rk::kBlockThreads, 0, ctx.stream, p);
    }
  } else if (p.dim <= rk::kBlockThreads * 8) {
    LaunchPdl(&rk::CachedBlockRowKernel<8>, row_blocks, rk::kBlockThreads, 0, ctx.stream, p);
  } else if (p.dim <= rk::kBlockThreads * 16) {
    LaunchPdl(&rk::CachedBlockRowKernel<16>, row_blocks, rk::kBlockThreads, 0, ctx.stream, p);
  } else if (p.dim <= rk::kMaxCachedDim) {
    LaunchPdl(&rk::CachedBlockRowKernel<32>, row_blocks, rk::kBlockThreads, 0, ctx.stream, p);
  } else {
    LaunchPdl(&rk::BlockRowKernel, row_blocks, rk::kBlockThreads, 0, ctx.stream, p);
  }
  return LaunchStatus(op);
}

}  // namespace

absl::Status RmsNorm(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                     int64_t dim, const float* weight, float eps, float* y, int64_t y_stride) {
  return Launch(ctx, "RmsNorm", rk::Params{x, x_stride, rows, dim, weight, eps, y, y_stride});
}

absl::Status AddRmsNorm(const Context& ctx, float* h, const float* delta, int64_t rows, int64_t dim,
                        const float* weight, float eps, float* y, int64_t y_stride) {
  if (rows > 0 && (h == nullptr || delta == nullptr))
    return absl::InvalidArgumentError("AddRmsNorm: h and delta must not be null");
  rk::Params p{h, dim, rows, dim, weight, eps, y, y_stride};
  p.add = delta;
  p.sum = h;
  return Launch(ctx, "AddRmsNorm", p);
}

}  // namespace twinspan::cuda
