// Body of LaunchLinear<CB>, included once per codebook by exl3_linear_<codebook>.cu.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_LAUNCH_IMPL_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_LAUNCH_IMPL_CUH_

#include "kernels/cuda/exl3_linear_launch.cuh"

namespace twinspan::cuda::exl3_kernel {

template <Cb CB, int K, int MT, int TPW>
cudaError_t LaunchOne(const LinearParams& p, cudaStream_t stream) {
  const int smem = SharedBytes<K, MT, TPW>(p.wk);
  auto* kernel = &LinearKernel<CB, K, MT, TPW>;
  if (smem > 48 * 1024 - 256) {  // The kernel's own 16 bytes of static shared memory count too.
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return e;
  }
  const dim3 grid(static_cast<unsigned>(p.n / 128 * ColGroups<TPW>()), static_cast<unsigned>(p.sk));
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = dim3(32 * p.wk);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attr;  // Overlaps this grid's weight prefetch with the input rotation.
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attr;
  config.numAttrs = 1;
  const cudaError_t e = cudaLaunchKernelEx(&config, kernel, p);
  if (e != cudaSuccess) cudaGetLastError();  // Clear it so the next launch reports its own error.
  return e;
}

template <Cb CB, int K>
cudaError_t LaunchRows(int mt, const LinearParams& p, cudaStream_t stream) {
  switch (mt) {
    case 1:  // Up to 8 rows the decode dominates: 2 tiles per warp keep twice the blocks.
      return p.m <= 8 ? LaunchOne<CB, K, 1, 2>(p, stream) : LaunchOne<CB, K, 1, 4>(p, stream);
    case 2:
      return LaunchOne<CB, K, 2, 4>(p, stream);
    case 4:  // 4 tiles at 64 rows would need 128 accumulators per lane.
      return LaunchOne<CB, K, 4, 2>(p, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

template <Cb CB>
cudaError_t LaunchLinear(int bits, int mt, const LinearParams& p, cudaStream_t stream) {
  switch (bits) {
    case 1:
      return LaunchRows<CB, 1>(mt, p, stream);
    case 2:
      return LaunchRows<CB, 2>(mt, p, stream);
    case 3:
      return LaunchRows<CB, 3>(mt, p, stream);
    case 4:
      return LaunchRows<CB, 4>(mt, p, stream);
    case 5:
      return LaunchRows<CB, 5>(mt, p, stream);
    case 6:
      return LaunchRows<CB, 6>(mt, p, stream);
    case 7:
      return LaunchRows<CB, 7>(mt, p, stream);
    case 8:
      return LaunchRows<CB, 8>(mt, p, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace twinspan::cuda::exl3_kernel

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_LAUNCH_IMPL_CUH_
