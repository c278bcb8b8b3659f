// Host side of GatedRmsNorm: validation and the launch. Device code: gated_rms_norm_kernel.cuh.
#include <cmath>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "kernels/cuda/gated_rms_norm.cuh"
#include "kernels/cuda/gated_rms_norm_kernel.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda {

absl::Status GatedRmsNorm(const Context& ctx, const float* x, const float* gate, int64_t groups,
                          int64_t dim, const float* weight, float eps, float* y) {
  if (groups < 0 || dim <= 0 || dim > (1 << 30) || !(eps >= 0.0f)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("GatedRmsNorm: groups %d, dim %d, eps %g", groups, dim, eps));
  }
  if (groups == 0) return absl::OkStatus();
  if (!x || !gate || !weight || !y) {
    return absl::InvalidArgumentError(
        "GatedRmsNorm: x, gate, weight and y must be device pointers");
  }
  namespace nk = gated_rms_norm_kernel;
  const int64_t blocks = (groups + nk::kWarps - 1) / nk::kWarps;
  if (blocks > 0x7fffffff) {
    return absl::InvalidArgumentError(
        absl::StrFormat("GatedRmsNorm: %d groups exceed the grid", groups));
  }
  LaunchPdl(&nk::GatedRmsNormKernel, static_cast<unsigned>(blocks), nk::kWarps * 32, 0, ctx.stream,
            x, gate, groups, static_cast<int>(dim), weight, eps, y);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    return absl::InternalError(
        absl::StrFormat("GatedRmsNorm: launch failed: %s", cudaGetErrorString(e)));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cuda
