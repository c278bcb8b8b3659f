// The EXL3 linear kernels of the prompt path (A fragments decoded ahead, 8/16/32/64-row groups).
#include "kernels/cuda/exl3_linear_launch_impl.cuh"

namespace twinspan::cuda::exl3_kernel {

cudaError_t LaunchFragments(const LaunchShape& shape, const LinearParams& p, cudaStream_t stream) {
  return LaunchRows<Cb::kFragments, kExl3FragmentWords>(shape, p, stream);
}

}  // namespace twinspan::cuda::exl3_kernel
