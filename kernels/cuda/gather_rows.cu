// Host side of GatherRows: the CPU op's checks, then launches of at most kMaxRows rows.
#include <algorithm>

#include "common/status.h"
#include "kernels/cpu/gather_rows.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/gather_rows.cuh"
#include "kernels/cuda/gather_rows_kernel.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda {

absl::Status GatherRows(const Context& ctx, const float* src, int64_t src_stride,
                        const int64_t* rows, int64_t count, int64_t width, float* dst,
                        int64_t dst_stride) {
  namespace gk = gather_rows_kernel;
  ABSL_RETURN_IF_ERROR(cpu::CheckGatherRows(src, src_stride, rows, count, width, dst, dst_stride));
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
