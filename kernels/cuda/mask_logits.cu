// Host side of MaskLogits: validation and one launch of (id blocks) x (rows).
#include <algorithm>

#include "absl/strings/str_format.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/mask_logits.cuh"
#include "kernels/cuda/mask_logits_kernel.cuh"

namespace twinspan::cuda {

absl::Status MaskLogits(const Context& ctx, float* logits, int64_t stride, int64_t vocab,
                        const uint32_t* allowed, int64_t rows) {
  namespace mk = mask_logits_kernel;
  if (vocab < 1 || stride < vocab || rows < 0 || rows > 65535) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MaskLogits: vocab %d, stride %d, rows %d", vocab, stride, rows));
  }
  if (rows == 0) return absl::OkStatus();
  if (logits == nullptr || allowed == nullptr) {
    return absl::InvalidArgumentError("MaskLogits: logits and allowed must not be null");
  }
  const int64_t blocks = std::min<int64_t>((vocab + mk::kThreads - 1) / mk::kThreads, 1024);
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(rows));
  mk::MaskLogitsKernel<<<grid, mk::kThreads, 0, ctx.stream>>>(logits, stride, vocab, allowed);
  return LaunchStatus("MaskLogits launch");
}

}  // namespace twinspan::cuda
