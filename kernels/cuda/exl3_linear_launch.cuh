// Launchers of the EXL3 linear kernel, one per codebook, each in its own translation unit so nvcc
// builds the 3 x 8 x 3 (codebook, K, row tiles) instantiations in parallel.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_LAUNCH_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_LAUNCH_CUH_

#include <cuda_runtime.h>

#include "kernels/cuda/exl3_linear_kernel.cuh"

namespace twinspan::cuda::exl3_kernel {

// Launches LinearKernel<CB, bits, MT> for p.m <= 16 * MT rows, MT in {1, 2, 4}. REQUIRES: p
// validated by the caller, 1 <= bits <= 8. Returns the launch error.
template <Cb CB>
cudaError_t LaunchLinear(int bits, int mt, const LinearParams& p, cudaStream_t stream);

extern template cudaError_t LaunchLinear<Cb::k3inst>(int, int, const LinearParams&, cudaStream_t);
extern template cudaError_t LaunchLinear<Cb::kMcg>(int, int, const LinearParams&, cudaStream_t);
extern template cudaError_t LaunchLinear<Cb::kMul1>(int, int, const LinearParams&, cudaStream_t);

}  // namespace twinspan::cuda::exl3_kernel

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_LAUNCH_CUH_
