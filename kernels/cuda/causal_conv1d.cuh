// Depthwise causal 1-D convolution with SiLU on the GPU. Twin of kernels/cpu/causal_conv1d.h.
#ifndef TWINSPAN_KERNELS_CUDA_CAUSAL_CONV1D_CUH_
#define TWINSPAN_KERNELS_CUDA_CAUSAL_CONV1D_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/exl3_linear.cuh"  // cuda::Context, until the CUDA backend gives it a header.

namespace twinspan::cuda {

// cpu::CausalConv1d on device pointers, asynchronous on ctx.stream: the same sum in the same order
// with the same roundings; only SiLU's expf differs (a few ulps). Row-invariant: a window of k rows
// gives the same bits as k calls of one row. The window after the last row goes from state_in
// ([kernel - 1, channels]) to state_out: the same buffer (in place) or a disjoint one.
// InvalidArgument naming the argument for rows < 0, channels <= 0, kernel < 1, a null pointer or
// states that partly overlap; Internal for a failed launch.
absl::Status CausalConv1d(const Context& ctx, const float* x, int64_t rows, int64_t channels,
                          const float* weight, int64_t kernel, const float* state_in,
                          float* state_out, float* y);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_CAUSAL_CONV1D_CUH_
