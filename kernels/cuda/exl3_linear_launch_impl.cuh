// Body of LaunchLinear<CB>, included once per codebook by exl3_linear_<codebook>.cu.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_LAUNCH_IMPL_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_LAUNCH_IMPL_CUH_

#include "kernels/cuda/exl3_linear_launch.cuh"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/shared_memory_limit.h"

namespace twinspan::cuda::exl3_kernel {

// Launches kKernel on the stream so it may start while the previous kernel finishes, or, if
// `cooperative`, with all its blocks resident at once (and after the previous kernel).
template <auto kKernel, typename... Args>
cudaError_t LaunchGrid(int blocks, int threads, int smem, int device, bool cooperative,
                       cudaStream_t stream, Args... args) {
  if (smem > 48 * 1024 - 256) {  // The kernel's own static shared memory counts too.
    const cudaError_t e = AllowSharedMemory<kKernel>(device, smem);
    if (e != cudaSuccess) return e;
  }
  const dim3 grid(static_cast<unsigned>(blocks)), block(static_cast<unsigned>(threads));
  if (cooperative)
    LaunchCooperative(kKernel, grid, block, static_cast<size_t>(smem), stream, args...);
  else
    LaunchMaybeEarly(PdlScopeFromEnv() != PdlScope::kNone, kKernel, grid, block,
                     static_cast<size_t>(smem), stream, args...);
  return cudaGetLastError();  // Cleared, so the next launch reports its own error.
}

// From 9 rows on the kernel's blocks wait on each other (its owners' folds): a cooperative launch.
template <Cb CB, int K, int NG, int TW>
cudaError_t LaunchKernel(const LaunchShape& s, const LaunchParams& p, cudaStream_t stream) {
  return LaunchGrid<&LinearKernel<CB, K, NG, TW>>(s.blocks, 32 * s.warps, s.smem_bytes, s.device,
                                                  NG >= 2, stream, p);
}

template <Cb CB, int K>
cudaError_t LaunchRows(const LaunchShape& s, const LaunchParams& p, cudaStream_t stream) {
  switch (s.ng) {
    case 1:
      return LaunchKernel<CB, K, 1, 4>(s, p, stream);
    case 2:
      return s.tw == 4 ? LaunchKernel<CB, K, 2, 4>(s, p, stream)
                       : LaunchKernel<CB, K, 2, 2>(s, p, stream);
    case 4:
      return LaunchKernel<CB, K, 4, 2>(s, p, stream);
    case 8:
      return LaunchKernel<CB, K, 8, 2>(s, p, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

template <Cb CB>
cudaError_t LaunchLinear(int bits, const LaunchShape& s, const LaunchParams& p,
                         cudaStream_t stream) {
  switch (bits) {
    case 1:
      return LaunchRows<CB, 1>(s, p, stream);
    case 2:
      return LaunchRows<CB, 2>(s, p, stream);
    case 3:
      return LaunchRows<CB, 3>(s, p, stream);
    case 4:
      return LaunchRows<CB, 4>(s, p, stream);
    case 5:
      return LaunchRows<CB, 5>(s, p, stream);
    case 6:
      return LaunchRows<CB, 6>(s, p, stream);
    case 7:
      return LaunchRows<CB, 7>(s, p, stream);
    case 8:
      return LaunchRows<CB, 8>(s, p, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace twinspan::cuda::exl3_kernel

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_LAUNCH_IMPL_CUH_
