// Launchers of the EXL3 linear kernel, one per codebook, each in its own translation unit so nvcc
// builds the 3 x 8 x 4 (codebook, K, row tiles x tiles per warp) instantiations in parallel.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_LAUNCH_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_LAUNCH_CUH_

#include <cuda_runtime.h>

#include "kernels/cuda/exl3_linear_kernel.cuh"

namespace twinspan::cuda::exl3_kernel {

// Launches LinearKernel<CB, bits, MT, TPW> for p.m <= 16 * MT rows, MT in {1, 2, 4}; TPW (tiles
// per warp) is 4 for 9..32 rows, else 2. REQUIRES: p
// validated by the caller, 1 <= bits <= 8. Returns the launch error.
template <Cb CB>
cudaError_t LaunchLinear(int bits, int mt, const LinearParams& p, cudaStream_t stream);

extern template cudaError_t LaunchLinear<Cb::k3inst>(int, int, const LinearParams&, cudaStream_t);
extern template cudaError_t LaunchLinear<Cb::kMcg>(int, int, const LinearParams&, cudaStream_t);
extern template cudaError_t LaunchLinear<Cb::kMul1>(int, int, const LinearParams&, cudaStream_t);

}  // namespace twinspan::cuda::exl3_kernel

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_LAUNCH_CUH_
