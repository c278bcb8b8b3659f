// Host side of GatherRows: the CPU op's checks, then launches of at most kMaxRows rows.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/gather_rows.cuh"
#include "kernels/cuda/gather_rows_kernel.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda {

absl::Status GatherRows(const Context& ctx, const float* src, int64_t src_stride,
                        const int64_t* rows, int64_t count, int64_t width, float* dst,
                        int64_t dst_stride) {
  namespace gk = gather_rows_kernel;
  if (count < 0 || width < 0 || src_stride < width || dst_stride < width ||
      (count > 0 && (src == nullptr || rows == nullptr || dst == nullptr))) {
    return absl::InvalidArgumentError(
        absl::StrFormat("GatherRows: %d rows of width %d, strides %d / %d (or a null array)", count,
                        width, src_stride, dst_stride));
  }
  for (int64_t i = 0; i < count; ++i) {
    if (rows[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("GatherRows: row index %d at %d is negative", rows[i], i));
    }
  }
  if (count == 0 || width == 0) return absl::OkStatus();
  gk::Params p;
  p.src = src;
  p.src_stride = src_stride;
  p.dst_stride = dst_stride;
  p.width = width;
  for (int64_t r0 = 0; r0 < count; r0 += gk::kMaxRows) {
    const int64_t n = std::min<int64_t>(gk::kMaxRows, count - r0);
    std::copy(rows + r0, rows + r0 + n, p.rows.v);
    p.dst = dst + r0 * dst_stride;
    LaunchPdl(&gk::GatherRowsKernel, static_cast<unsigned>(n), gk::kThreads, 0, ctx.stream, p);
    ABSL_RETURN_IF_ERROR(LaunchStatus("GatherRows launch"));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cuda
