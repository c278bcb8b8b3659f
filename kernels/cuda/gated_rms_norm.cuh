// RMS norm gated by SiLU on the GPU, the output norm of a Gated DeltaNet layer. Twin of
// kernels/cpu/gated_rms_norm.h.
#ifndef TWINSPAN_KERNELS_CUDA_GATED_RMS_NORM_CUH_
#define TWINSPAN_KERNELS_CUDA_GATED_RMS_NORM_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/exl3_linear.cuh"  // cuda::Context, until the CUDA backend gives it a header.

namespace twinspan::cuda {

// y = weight * (x * rsqrt(mean(x^2) + eps)) * silu(gate) per group of dim values, on device
// pointers, asynchronous on ctx.stream. One warp per group: the sum of squares runs as 32 strided
// lane sums then a fixed butterfly (not the CPU's index order); everything else rounds as the CPU
// op. A group's result never depends on how many groups share the call. y may equal x.
// InvalidArgument for groups < 0, dim <= 0, eps < 0 or NaN, or a null pointer; Internal for a
// failed launch.
absl::Status GatedRmsNorm(const Context& ctx, const float* x, const float* gate, int64_t groups,
                          int64_t dim, const float* weight, float eps, float* y);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_GATED_RMS_NORM_CUH_
