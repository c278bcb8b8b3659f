// Device code of TrellisEncode: one block of kThreads per tile, each thread a strided share of
// the 2^(16-K) out-edges. Per position every out-edge takes the best of its 2^K states (k
// ascending, first strict minimum, as the CPU's traceback picks), cost fma(d, d, prev[s >> K]) with
// d = value(s) - x, so the cost rows are the CPU's bit for bit; the chosen k is kept per (position,
// edge) for the traceback, which thread 0 walks. Codebook values are computed, not looked up
// (exl3_decode.cuh's Codebook2, the decode kernels' exact fp16), so nothing streams but the
// back-pointers. Cost rows live in shared memory (2 x 2^(16-K) floats: 128 KB at K = 2), except at
// K = 1 (256 KB), where they live in global scratch.
#ifndef TWINSPAN_KERNELS_CUDA_TRELLIS_ENCODE_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_TRELLIS_ENCODE_KERNEL_CUH_

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/exl3_decode.cuh"

namespace twinspan::cuda::trellis_kernel {

constexpr int kThreads = 1024;
constexpr int kPositions = 256;

struct Args {
  const float* tiles = nullptr;  // [tiles, 256]
  uint16_t* states = nullptr;    // [tiles, 256]
  float* values = nullptr;       // [tiles, 256]
  uint8_t* back = nullptr;       // [tiles, 256, edges]: the chosen k.
  float* rows = nullptr;         // [tiles, 2, edges] when the cost rows are global (K = 1).
};

template <int K>
constexpr bool kSharedRows = K >= 2;

template <int K>
constexpr int SharedBytes() {
  return (kPositions + (kSharedRows<K> ? 2 * (1 << (16 - K)) : 0)) *
         static_cast<int>(sizeof(float));
}

template <exl3_kernel::Cb CB>
__device__ __forceinline__ float2 Values2(uint32_t s0, uint32_t s1) {
  const uint32_t h = exl3_kernel::Codebook2<CB>(s0, s1);
  return __half22float2(*reinterpret_cast<const __half2*>(&h));
}

// One pass over 256 positions from row `prev` (initialized by the caller); returns the last row.
template <int K, exl3_kernel::Cb CB>
__device__ float* Pass(const float* x, int roll, float* prev, float* next, uint8_t* back) {
  constexpr int kEdges = 1 << (16 - K), kCodes = 1 << K, kShift = 16 - K;
  for (int i = 0; i < kPositions; ++i) {
    const float xi = x[(i + roll) & (kPositions - 1)];
    for (int e = threadIdx.x; e < kEdges; e += kThreads) {
      float best = __int_as_float(0x7f800000);
      int best_k = 0;
#pragma unroll 4
      for (int k = 0; k < kCodes; k += 2) {
        const uint32_t s0 = (static_cast<uint32_t>(k) << kShift) | e;
        const uint32_t s1 = s0 + (1u << kShift);
        const float2 v = Values2<CB>(s0, s1);
        const float d0 = __fsub_rn(v.x, xi), d1 = __fsub_rn(v.y, xi);
        const float c0 = __fmaf_rn(d0, d0, prev[s0 >> K]);
        const float c1 = __fmaf_rn(d1, d1, prev[s1 >> K]);
        if (c0 < best) {
          best = c0;
          best_k = k;
        }
        if (c1 < best) {
          best = c1;
          best_k = k + 1;
        }
      }
      next[e] = best;
      back[i * kEdges + e] = static_cast<uint8_t>(best_k);
    }
    __syncthreads();
    float* t = prev;
    prev = next;
    next = t;
  }
  return prev;
}

template <int K, exl3_kernel::Cb CB>
__global__ void __launch_bounds__(kThreads) TrellisEncodeKernel(Args args) {
  constexpr int kEdges = 1 << (16 - K), kShift = 16 - K;
  extern __shared__ float shared[];
  __shared__ float reduce_cost[kThreads / 32];
  __shared__ int reduce_edge[kThreads / 32];
  __shared__ int ring_edge;
  const int64_t tile = blockIdx.x;
  float* x = shared;
  float* rows = kSharedRows<K> ? shared + kPositions : args.rows + tile * 2 * kEdges;
  uint8_t* back = args.back + tile * kPositions * kEdges;
  if (threadIdx.x < kPositions) x[threadIdx.x] = args.tiles[tile * kPositions + threadIdx.x];
  for (int e = threadIdx.x; e < kEdges; e += kThreads) rows[e] = 0.0f;
  __syncthreads();

  // Pass 1: every start allowed, from position 128 round the ring.
  const float* end = Pass<K, CB>(x, kPositions / 2, rows, rows + kEdges, back);
  float best = __int_as_float(0x7f800000);
  int best_edge = 0x7fffffff;
  for (int e = threadIdx.x; e < kEdges; e += kThreads) {
    if (end[e] < best) {
      best = end[e];
      best_edge = e;
    }
  }
  // The first edge of the smallest cost, as the CPU's scan finds it.
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float c = __shfl_down_sync(0xffffffffu, best, offset);
    const int e = __shfl_down_sync(0xffffffffu, best_edge, offset);
    if (c < best || (c == best && e < best_edge)) {
      best = c;
      best_edge = e;
    }
  }
  if ((threadIdx.x & 31) == 0) {
    reduce_cost[threadIdx.x / 32] = best;
    reduce_edge[threadIdx.x / 32] = best_edge;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float c = reduce_cost[0];
    int edge = reduce_edge[0];
    for (int w = 1; w < kThreads / 32; ++w) {
      if (reduce_cost[w] < c || (reduce_cost[w] == c && reduce_edge[w] < edge)) {
        c = reduce_cost[w];
        edge = reduce_edge[w];
      }
    }
    for (int i = kPositions - 1; i >= kPositions / 2; --i) {  // Back to position 0's in-edge.
      const uint32_t s = (static_cast<uint32_t>(back[i * kEdges + edge]) << kShift) | edge;
      edge = static_cast<int>(s >> K);
    }
    ring_edge = edge;
  }
  __syncthreads();

  // Pass 2: pinned to that edge at both ends.
  const int ring = ring_edge;
  for (int e = threadIdx.x; e < kEdges; e += kThreads) {
    rows[e] = e == ring ? 0.0f : __int_as_float(0x7f800000);
  }
  __syncthreads();
  Pass<K, CB>(x, 0, rows, rows + kEdges, back);
  if (threadIdx.x == 0) {
    int edge = ring;
    for (int i = kPositions - 1; i >= 0; --i) {
      const uint32_t s = (static_cast<uint32_t>(back[i * kEdges + edge]) << kShift) | edge;
      args.states[tile * kPositions + i] = static_cast<uint16_t>(s);
      args.values[tile * kPositions + i] = Values2<CB>(s, s).x;
      edge = static_cast<int>(s >> K);
    }
  }
}

}  // namespace twinspan::cuda::trellis_kernel

#endif  // TWINSPAN_KERNELS_CUDA_TRELLIS_ENCODE_KERNEL_CUH_
