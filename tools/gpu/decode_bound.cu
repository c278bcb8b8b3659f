#include <type_traits>

#include "kernels/cuda/exl3_decode.cuh"
#include "kernels/cuda/exl3_layout.h"
#include "tools/gpu/decode_bound.cuh"

namespace twinspan::gpu {
namespace {

using cuda::exl3_kernel::Cb;

// Lane `lane`'s K words of one half-strip, as the device layout stores them (vectors interleaved
// across the lanes), read once: not kept in L1.
template <int K>
__device__ __forceinline__ void LoadHalfStrip(const uint32_t* strip, int lane, uint32_t (&w)[K]) {
  constexpr int V = cuda::Exl3VectorWords(K);
#pragma unroll
  for (int v = 0; v < K / V; ++v) {
    const uint32_t* src = strip + (v * 32 + lane) * V;
    if constexpr (V == 4) {
      asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(w[4 * v]), "=r"(w[4 * v + 1]), "=r"(w[4 * v + 2]), "=r"(w[4 * v + 3])
                   : "l"(src));
    } else {
      static_assert(V == 2, "K = 4 or 6");
      asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];\n"
                   : "=r"(w[2 * v]), "=r"(w[2 * v + 1])
                   : "l"(src));
    }
  }
}

// Each warp takes one contiguous run of half-strips and keeps D of them in flight; the addresses
// past its run are clamped (loaded, not used), so the loop has one uniform branch a half-strip.
template <int K, DecodeWork W, int kWarps, int D>
__global__ void __launch_bounds__(kWarps * 32, 1)
    StreamKernel(const uint32_t* __restrict__ words, int64_t half_strips, float* sink) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = blockIdx.x * int64_t{kWarps} + threadIdx.x / 32;
  const int64_t warps = gridDim.x * int64_t{kWarps};
  const int64_t per = (half_strips + warps - 1) / warps;
  const int64_t begin = min(half_strips, warp * per), end = min(half_strips, begin + per);
  constexpr int64_t kStride = 32 * K;  // Words of one half-strip.
  auto at = [&](int64_t s) { return words + min(s, half_strips - 1) * kStride; };

  uint32_t buf[D][K];
#pragma unroll
  for (int d = 0; d < D; ++d) LoadHalfStrip<K>(at(begin + d), lane, buf[d]);
  float c[4] = {0.f, 0.f, 0.f, 0.f}, c2[4] = {0.f, 0.f, 0.f, 0.f};
  uint32_t folded = 0;
  constexpr uint32_t kOnes = 0x3C003C00u;  // Two fp16 ones: a B fragment of 8 rows.
  for (int64_t s = begin; s < end; s += D) {
#pragma unroll
    for (int d = 0; d < D; ++d) {
      uint32_t w[K];
#pragma unroll
      for (int i = 0; i < K; ++i) w[i] = buf[d][i];
      LoadHalfStrip<K>(at(s + d + D), lane, buf[d]);
      if (s + d >= end) break;
      if constexpr (W == DecodeWork::kLoad) {
#pragma unroll
        for (int i = 0; i < K; ++i) folded ^= w[i];
      } else {
        auto tile = [&](auto t) {
          uint32_t a[4];
          cuda::exl3_kernel::DecodeTileA<Cb::kMul1, K, decltype(t)::value>(w, lane, a);
          cuda::exl3_kernel::Mma16816(c, a, kOnes, kOnes);
          if constexpr (W == DecodeWork::kDecodeMma2)
            cuda::exl3_kernel::Mma16816(c2, a, kOnes, kOnes);
        };
        tile(std::integral_constant<int, 0>{});
        tile(std::integral_constant<int, 1>{});
        tile(std::integral_constant<int, 2>{});
        tile(std::integral_constant<int, 3>{});
      }
    }
  }
  const float v = c[0] + c[1] + c[2] + c[3] + c2[0] + c2[1] + c2[2] + c2[3] +
                  static_cast<float>(folded & 0xFFFFu);
  if (lane == 0) sink[warp] = v;
}

// One instance per entry of kDecodeShapes.
template <int K, DecodeWork W>
cudaError_t LaunchShape(const uint32_t* words, int64_t half_strips, DecodeShape shape, int sms,
                        float* sink, cudaStream_t stream) {
  if (shape.warps == 16 && shape.depth == 4) {
    StreamKernel<K, W, 16, 4><<<sms, 16 * 32, 0, stream>>>(words, half_strips, sink);
  } else if (shape.warps == 24 && shape.depth == 4) {
    StreamKernel<K, W, 24, 4><<<sms, 24 * 32, 0, stream>>>(words, half_strips, sink);
  } else if (shape.warps == 32 && shape.depth == 2) {
    StreamKernel<K, W, 32, 2><<<sms, 32 * 32, 0, stream>>>(words, half_strips, sink);
  } else {
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

template <int K>
cudaError_t LaunchWork(const uint32_t* words, int64_t half_strips, DecodeWork work,
                       DecodeShape shape, int sms, float* sink, cudaStream_t stream) {
  switch (work) {
    case DecodeWork::kLoad:
      return LaunchShape<K, DecodeWork::kLoad>(words, half_strips, shape, sms, sink, stream);
    case DecodeWork::kDecodeMma1:
      return LaunchShape<K, DecodeWork::kDecodeMma1>(words, half_strips, shape, sms, sink, stream);
    case DecodeWork::kDecodeMma2:
      return LaunchShape<K, DecodeWork::kDecodeMma2>(words, half_strips, shape, sms, sink, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t DecodeStream(const uint32_t* words, int64_t half_strips, int bits, DecodeWork work,
                         DecodeShape shape, int sms, float* sink, cudaStream_t stream) {
  if (half_strips <= 0 || sms <= 0) return cudaErrorInvalidValue;
  if (bits == 4) return LaunchWork<4>(words, half_strips, work, shape, sms, sink, stream);
  if (bits == 6) return LaunchWork<6>(words, half_strips, work, shape, sms, sink, stream);
  return cudaErrorInvalidValue;
}

}  // namespace twinspan::gpu
