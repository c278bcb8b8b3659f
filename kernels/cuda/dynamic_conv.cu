// The launch of DynamicConv's kernel (validation is in dynamic_conv.cc).
#include <algorithm>

#include "kernels/cuda/dynamic_conv_kernel.cuh"
#include "kernels/cuda/dynamic_conv_launch.h"

namespace twinspan::cuda::dynamic_conv_kernel {

cudaError_t LaunchDynamicConv(const Args& args, cudaStream_t stream) {
  const int64_t n = args.rows * args.channels;
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, 1 << 16);
  // Plain launch: launched early, the draft's kernels cost it ~0.1 ms on the H200 (docs/perf.md).
  DynamicConvKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace twinspan::cuda::dynamic_conv_kernel
