#include <cuda_fp16.h>

#include "tools/gpu/synthetic.cuh"

namespace twinspan::gpu {
namespace {

__device__ __forceinline__ uint64_t Mix(uint64_t x) {  // splitmix64 finalizer.
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__device__ __forceinline__ float Uniform(uint64_t h) {  // [0, 1)
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

__global__ void WordsKernel(uint16_t* out, int64_t count, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x)
    out[i] = static_cast<uint16_t>(Mix(seed * 0x100000001B3ull + i) >> 17);
}

__global__ void ScalesKernel(uint16_t* out, int64_t count, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const uint64_t h = Mix(seed * 0x100000001B3ull + i);
    const float v = (h & 1 ? 1.f : -1.f) * (0.02f + 0.08f * Uniform(h));
    out[i] = __half_as_ushort(__float2half_rn(v));
  }
}

__global__ void NormalKernel(float* out, int64_t count, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    uint64_t h = seed * 0x100000001B3ull + i;
    float s = 0.f;
    for (int j = 0; j < 4; ++j) s += Uniform(h = Mix(h));
    out[i] = (s - 2.f) * 1.7320508f;  // Irwin-Hall(4) has variance 1/3.
  }
}

__global__ void SpinKernel(int64_t cycles) {
  const int64_t start = clock64();
  while (clock64() - start < cycles) {
  }
}

constexpr int kThreads = 256, kBlocks = 4096;

}  // namespace

cudaError_t FillRandomWords(uint16_t* words, int64_t count, uint64_t seed, cudaStream_t stream) {
  WordsKernel<<<kBlocks, kThreads, 0, stream>>>(words, count, seed);
  return cudaGetLastError();
}

cudaError_t FillRandomScales(uint16_t* halves, int64_t count, uint64_t seed, cudaStream_t stream) {
  ScalesKernel<<<kBlocks, kThreads, 0, stream>>>(halves, count, seed);
  return cudaGetLastError();
}

cudaError_t FillRandomNormal(float* values, int64_t count, uint64_t seed, cudaStream_t stream) {
  NormalKernel<<<kBlocks, kThreads, 0, stream>>>(values, count, seed);
  return cudaGetLastError();
}

cudaError_t Spin(int64_t cycles, cudaStream_t stream) {
  SpinKernel<<<1, 1, 0, stream>>>(cycles);
  return cudaGetLastError();
}

}  // namespace twinspan::gpu
