// Launchers of the EXL3 linear kernel, one per codebook, each in its own translation unit so nvcc
// builds the 3 x 8 x 5 (codebook, K, row groups and item tiles) instantiations in parallel.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_LAUNCH_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_LAUNCH_CUH_

#include <cuda_runtime.h>

#include "kernels/cuda/exl3_linear_kernel.cuh"

namespace twinspan::cuda::exl3_kernel {

// How one launch runs (exl3_linear.cu computes it from the shape, rows and SM count).
struct LaunchShape {
  int ng = 1;          // Row groups of 8: 1, 2, 4 or 8.
  int tw = 4;          // Tiles of a work item: 4 (up to 16 rows) or 2 (from 9 rows).
  int blocks = 0;      // Grid size.
  int warps = 0;       // Per block, at most MaxWarps(ng).
  int smem_bytes = 0;  // Dynamic shared memory per block.
  int device = 0;      // The current device, whose shared-memory limit the launch may raise.
};

// Launches LinearKernel<CB, bits, ng, tw> with programmatic dependent launch. REQUIRES: p and shape
// computed by the caller, 1 <= bits <= 8. Returns the launch error.
template <Cb CB>
cudaError_t LaunchLinear(int bits, const LaunchShape& shape, const LaunchParams& p,
                         cudaStream_t stream);

extern template cudaError_t LaunchLinear<Cb::k3inst>(int, const LaunchShape&, const LaunchParams&,
                                                     cudaStream_t);
extern template cudaError_t LaunchLinear<Cb::kMcg>(int, const LaunchShape&, const LaunchParams&,
                                                   cudaStream_t);
extern template cudaError_t LaunchLinear<Cb::kMul1>(int, const LaunchShape&, const LaunchParams&,
                                                    cudaStream_t);

}  // namespace twinspan::cuda::exl3_kernel

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_LAUNCH_CUH_
