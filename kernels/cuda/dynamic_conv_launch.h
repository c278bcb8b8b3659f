// The launch of DynamicConv's kernel, callable from C++20 host code (dynamic_conv.cc) and
// defined in dynamic_conv.cu. Internal to the CUDA backend.
#ifndef TWINSPAN_KERNELS_CUDA_DYNAMIC_CONV_LAUNCH_H_
#define TWINSPAN_KERNELS_CUDA_DYNAMIC_CONV_LAUNCH_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace twinspan::cuda::dynamic_conv_kernel {

// Validated arguments of one launch; see cpu::DynamicConvParams for the meaning.
struct Args {
  float* out;            // [rows, channels]
  const float* x;        // [rows, channels]
  const float* base;     // [taps, channels]
  const float* dynamic;  // row t at dynamic + t * dynamic_row_stride: [taps, channels / group]
  int64_t rows, channels, taps, group_size, dynamic_row_stride;
};

// Enqueues the kernel on `stream`; returns the launch's error.
cudaError_t LaunchDynamicConv(const Args& args, cudaStream_t stream);

}  // namespace twinspan::cuda::dynamic_conv_kernel

#endif  // TWINSPAN_KERNELS_CUDA_DYNAMIC_CONV_LAUNCH_H_
