// Launcher of the prompt path's decode (DequantizeKernel), one instantiation per codebook and K.
#include "kernels/cuda/exl3_dequantize_kernel.cuh"
#include "kernels/cuda/exl3_linear_launch_impl.cuh"

namespace twinspan::cuda::exl3_kernel {
namespace {

template <Cb CB>
cudaError_t LaunchBits(int bits, const uint32_t* trellis, uint32_t* fragments, int64_t half_strips,
                       cudaStream_t stream) {
  const int64_t blocks = (half_strips + kDequantizeWarps - 1) / kDequantizeWarps;
  if (blocks < 1 || blocks > 0x7FFFFFFF) return cudaErrorInvalidValue;
  const int b = static_cast<int>(blocks), threads = 32 * kDequantizeWarps;
  switch (bits) {
    case 1:
      return LaunchDependent(&DequantizeKernel<CB, 1>, b, threads, 0, stream, trellis, fragments,
                             half_strips);
    case 2:
      return LaunchDependent(&DequantizeKernel<CB, 2>, b, threads, 0, stream, trellis, fragments,
                             half_strips);
    case 3:
      return LaunchDependent(&DequantizeKernel<CB, 3>, b, threads, 0, stream, trellis, fragments,
                             half_strips);
    case 4:
      return LaunchDependent(&DequantizeKernel<CB, 4>, b, threads, 0, stream, trellis, fragments,
                             half_strips);
    case 5:
      return LaunchDependent(&DequantizeKernel<CB, 5>, b, threads, 0, stream, trellis, fragments,
                             half_strips);
    case 6:
      return LaunchDependent(&DequantizeKernel<CB, 6>, b, threads, 0, stream, trellis, fragments,
                             half_strips);
    case 7:
      return LaunchDependent(&DequantizeKernel<CB, 7>, b, threads, 0, stream, trellis, fragments,
                             half_strips);
    case 8:
      return LaunchDependent(&DequantizeKernel<CB, 8>, b, threads, 0, stream, trellis, fragments,
                             half_strips);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t LaunchDequantize(Cb cb, int bits, const uint32_t* trellis, uint32_t* fragments,
                             int64_t half_strips, cudaStream_t stream) {
  switch (cb) {
    case Cb::k3inst:
      return LaunchBits<Cb::k3inst>(bits, trellis, fragments, half_strips, stream);
    case Cb::kMcg:
      return LaunchBits<Cb::kMcg>(bits, trellis, fragments, half_strips, stream);
    case Cb::kMul1:
      return LaunchBits<Cb::kMul1>(bits, trellis, fragments, half_strips, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace twinspan::cuda::exl3_kernel
