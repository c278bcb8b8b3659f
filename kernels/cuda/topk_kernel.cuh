// Device code of TopK: one 512-thread block per row runs the radix select of select_kernel.cuh on
// (value, column) keys, gathers the k winners into shared memory, sorts them and writes them out.
// A row costs a NaN pass, 3-8 histogram passes (8 bits of key each; it stops once the boundary
// bin holds exactly the keys still wanted) and a gather pass over its columns; k = 1 (greedy
// verification's argmax over 248,320 logits took 430 us that way) one pass for the largest key.
#ifndef TWINSPAN_KERNELS_CUDA_TOPK_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_TOPK_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/reduce.cuh"
#include "kernels/cuda/select_kernel.cuh"

namespace twinspan::cuda::topk_kernel {

constexpr int kThreads = 512;
constexpr int kMaxK = 4096;

struct Params {
  const float* logits = nullptr;
  int64_t stride = 0;
  int64_t cols = 0;
  int k = 0;
  float* values = nullptr;
  int32_t* indices = nullptr;
};

constexpr int kTop1Unroll = 8;  // float4 loads in flight per thread

// k = 1: the largest rank key and the NaN check in one pass, 16-byte loads where the row allows.
// The largest key is what the radix select's sorted winners start with: same value, same column.
__device__ __forceinline__ void Top1(const Params& p, const float* row, float* values,
                                     int32_t* indices) {
  namespace sk = select_kernel;
  __shared__ unsigned long long warp_best[kThreads / 32];
  unsigned long long best = 0;  // Below every key of a non-NaN value.
  bool nan = false;
  const auto take = [&](float v, int64_t i) {
    nan |= isnan(v);
    const unsigned long long key = sk::RankKey(v, i);
    best = key > best ? key : best;
  };
  const int64_t head =
      min(p.cols, static_cast<int64_t>((16 - reinterpret_cast<uintptr_t>(row) % 16) % 16 / 4));
  for (int64_t i = threadIdx.x; i < head; i += kThreads) take(row[i], i);
  const int64_t quads = (p.cols - head) / 4;
  const float4* body = reinterpret_cast<const float4*>(row + head);
  int64_t j = threadIdx.x;
  for (; j + (kTop1Unroll - 1) * kThreads < quads; j += kTop1Unroll * kThreads) {
    float4 q[kTop1Unroll];
#pragma unroll
    for (int u = 0; u < kTop1Unroll; ++u) q[u] = body[j + u * kThreads];
#pragma unroll
    for (int u = 0; u < kTop1Unroll; ++u) {
      const int64_t i = head + 4 * (j + u * kThreads);
      take(q[u].x, i);
      take(q[u].y, i + 1);
      take(q[u].z, i + 2);
      take(q[u].w, i + 3);
    }
  }
  for (; j < quads; j += kThreads) {
    const float4 q = body[j];
    const int64_t i = head + 4 * j;
    take(q.x, i);
    take(q.y, i + 1);
    take(q.z, i + 2);
    take(q.w, i + 3);
  }
  for (int64_t i = head + 4 * quads + threadIdx.x; i < p.cols; i += kThreads) take(row[i], i);
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const unsigned long long other = __shfl_xor_sync(0xffffffffu, best, offset);
    best = other > best ? other : best;
  }
  if (threadIdx.x % 32 == 0) warp_best[threadIdx.x / 32] = best;
  if (__syncthreads_or(nan)) {  // Also the barrier after warp_best's writes.
    if (threadIdx.x == 0) {
      values[0] = QuietNaN();
      indices[0] = -1;
    }
    return;
  }
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; ++w) best = warp_best[w] > best ? warp_best[w] : best;
    const int64_t column = sk::KeyColumn(best);
    values[0] = row[column];
    indices[0] = static_cast<int32_t>(column);
  }
}

__global__ void __launch_bounds__(kThreads) TopKKernel(const Params p) {
  StartDependent();
  namespace sk = select_kernel;
  __shared__ sk::SelectShared s;
  __shared__ uint64_t keys[kMaxK];
  const float* row = p.logits + static_cast<int64_t>(blockIdx.x) * p.stride;
  float* values = p.values + static_cast<int64_t>(blockIdx.x) * p.k;
  int32_t* indices = p.indices + static_cast<int64_t>(blockIdx.x) * p.k;
  if (p.k == 1) return Top1(p, row, values, indices);
  bool nan = false;
#pragma unroll 8
  for (int64_t i = threadIdx.x; i < p.cols; i += kThreads) nan |= isnan(row[i]);
  if (__syncthreads_or(nan)) {
    for (int j = threadIdx.x; j < p.k; j += kThreads) {
      values[j] = QuietNaN();
      indices[j] = -1;
    }
    return;
  }
  const auto key = [&](int64_t i) { return sk::RankKey(row[i], i); };
  const uint64_t threshold = sk::SelectThreshold<kThreads>(p.cols, key, p.k, s);
  const unsigned count = sk::Gather<kThreads>(p.cols, key, threshold, keys, s);
  sk::SortDescending<kThreads>(keys, count);
  for (int j = threadIdx.x; j < p.k; j += kThreads) {
    const int64_t column = sk::KeyColumn(keys[j]);
    values[j] = row[column];
    indices[j] = static_cast<int32_t>(column);
  }
}

}  // namespace twinspan::cuda::topk_kernel

#endif  // TWINSPAN_KERNELS_CUDA_TOPK_KERNEL_CUH_
