// Host side of TopK: validation and one block per row.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/topk.cuh"
#include "kernels/cuda/topk_kernel.cuh"

namespace twinspan::cuda {

absl::Status TopK(const Context& ctx, const float* logits, int64_t logits_stride, int64_t rows,
                  int64_t cols, int64_t k, float* values, int32_t* indices) {
  namespace tk = topk_kernel;
  static_assert(tk::kMaxK == kMaxTopK);
  if (rows < 0 || cols <= 0 || cols > 0x7fffffff || k < 1 || k > std::min(cols, kMaxTopK)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TopK: k = %d must be in [1, min(cols = %d, %d)] (rows = %d)", k, cols, kMaxTopK, rows));
  }
  if (logits_stride < cols) {
    return absl::InvalidArgumentError(
        absl::StrFormat("TopK: logits_stride %d is below cols %d", logits_stride, cols));
  }
  if (rows == 0) return absl::OkStatus();
  if (logits == nullptr || values == nullptr || indices == nullptr) {
    return absl::InvalidArgumentError("TopK: logits, values and indices must not be null");
  }
  const tk::Params p{logits, logits_stride, cols, static_cast<int>(k), values, indices};
  for (int64_t r0 = 0; r0 < rows; r0 += 0x7fffffff) {  // Grid x is 31 bits.
    tk::Params part = p;
    part.logits += r0 * logits_stride;
    part.values += r0 * k;
    part.indices += r0 * k;
    const int64_t n = std::min<int64_t>(rows - r0, 0x7fffffff);
    // Plain launch: launched early, the draft's kernels cost it ~0.1 ms on the H200 (docs/perf.md).
    tk::TopKKernel<<<static_cast<unsigned>(n), tk::kThreads, 0, ctx.stream>>>(part);
    ABSL_RETURN_IF_ERROR(LaunchStatus("TopK launch"));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cuda
