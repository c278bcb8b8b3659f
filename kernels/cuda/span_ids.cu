// The launch of SpanIds' kernel (validation is in span_ids.cc).
#include "kernels/cuda/span_ids_kernel.cuh"

namespace twinspan::cuda::span_ids_kernel {

cudaError_t LaunchSpanIds(const Args& args, cudaStream_t stream) {
  const int64_t blocks = (args.count + kThreads - 1) / kThreads;
  SpanIdsKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace twinspan::cuda::span_ids_kernel
