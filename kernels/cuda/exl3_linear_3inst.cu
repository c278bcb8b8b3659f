// EXL3 linear kernels for the 3inst codebook (K = 1..8, 8/16/32/64-row groups).
#include "kernels/cuda/exl3_linear_launch_impl.cuh"

namespace twinspan::cuda::exl3_kernel {
template cudaError_t LaunchLinear<Cb::k3inst>(int, const LaunchShape&, const LaunchParams&,
                                              cudaStream_t);
}  // namespace twinspan::cuda::exl3_kernel
