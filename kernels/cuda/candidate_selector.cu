// The launch of SelectorWalk's kernel (validation is in candidate_selector.cc).
#include "kernels/cuda/candidate_selector_kernel.cuh"
#include "kernels/cuda/candidate_selector_launch.h"

namespace twinspan::cuda::selector_kernel {

cudaError_t LaunchSelectorWalk(const Args& args, cudaStream_t stream) {
  SelectorWalkKernel<<<1, kThreads, SharedBytes(args.top_k, args.rank), stream>>>(args);
  return cudaGetLastError();
}

}  // namespace twinspan::cuda::selector_kernel
