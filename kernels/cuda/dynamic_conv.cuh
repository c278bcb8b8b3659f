// DFlash2's grouped dynamic causal convolution on the GPU. Twin of kernels/cpu/dynamic_conv.h.
// Host code only (C++20: the spans), so the entry lives in dynamic_conv.cc and launches through
// dynamic_conv_launch.h.
#ifndef TWINSPAN_KERNELS_CUDA_DYNAMIC_CONV_CUH_
#define TWINSPAN_KERNELS_CUDA_DYNAMIC_CONV_CUH_

#include <span>

#include "absl/status/status.h"
#include "kernels/cpu/dynamic_conv.h"
#include "kernels/cuda/exl3_linear.cuh"  // cuda::Context, until the CUDA backend gives it a header.

namespace twinspan::cuda {

// cpu::DynamicConv on device memory (the spans hold device pointers and their sizes),
// asynchronous on ctx.stream. Bit-identical to the CPU op: each output is the same sequence of
// separately rounded products and adds (when the CPU build does not contract them into fmas, as
// x86-64 builds without -mfma do not). Rows are independent, so row-invariant.
// Errors: the CPU op's InvalidArgument for sizes, and InvalidArgument when out overlaps x;
// Internal for a failed launch.
absl::Status DynamicConv(const Context& ctx, std::span<float> out, std::span<const float> x,
                         std::span<const float> base, std::span<const float> dynamic,
                         const cpu::DynamicConvParams& params);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_DYNAMIC_CONV_CUH_
