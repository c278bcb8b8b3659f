// The launch of SelectorWalk's kernel (validation is in candidate_selector.cc).
#include "kernels/cuda/candidate_selector_kernel.cuh"
#include "kernels/cuda/candidate_selector_launch.h"

namespace twinspan::cuda::selector_kernel {

cudaError_t LaunchSelectorWalk(const Args& args, cudaStream_t stream) {
  SelectorWalkKernel<<<1, kThreads, SharedBytes(args.top_k, args.rank), stream>>>(args);
  return cudaGetLastError();
}

cudaError_t LaunchSelectorScoreTable(const Args& args, float* table, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(args.slots * args.top_k));
  SelectorScoreTableKernel<<<grid, kThreads, SharedBytes(args.top_k, args.rank), stream>>>(args,
                                                                                           table);
  return cudaGetLastError();
}

}  // namespace twinspan::cuda::selector_kernel
