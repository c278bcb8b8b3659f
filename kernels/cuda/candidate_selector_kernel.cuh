// Device code of SelectorWalk: the whole walk in one block of 256 threads, slot after slot.
//
// Per slot: all threads gather the gated predecessor row pred[prev] * hp[s] and the top_k
// successor rows into shared memory (rows padded by one float, so the k readers below hit k
// different banks); thread c < top_k then sums its edge over the rank in index order, exactly as
// the CPU op, and thread 0 picks the candidate (argmax, or the CPU op's softmax and inverse CDF).
// For the 27B's drafter (7 slots, top-16, rank 256) a slot reads 17 rows of 512 bytes (bf16); the
// 256 dependent adds of an edge dominate, about a microsecond a slot.
#ifndef TWINSPAN_KERNELS_CUDA_CANDIDATE_SELECTOR_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_CANDIDATE_SELECTOR_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/candidate_selector_launch.h"

namespace twinspan::cuda::selector_kernel {

// Entry r of codebook row `row`, widened to fp32 (bf16 widens exactly).
__device__ inline float Entry(const void* book, bool bf16, int64_t row, int r, int rank) {
  const int64_t i = row * rank + r;
  if (bf16) {
    const uint16_t bits = static_cast<const uint16_t*>(book)[i];
    return __uint_as_float(static_cast<uint32_t>(bits) << 16);
  }
  return static_cast<const float*>(book)[i];
}

// Thread 0's pick for slot s: the argmax (ties keep the lower index), or the CPU op's softmax
// and inverse CDF with `uniform`, writing the probabilities to probs.
__device__ __noinline__ int Choose(float* slot_scores, int top_k, float temperature, float uniform,
                                   float* probs) {
  int chosen = 0;
  if (temperature <= 0.0f) {
    for (int c = 1; c < top_k; ++c) {
      if (slot_scores[c] > slot_scores[chosen]) chosen = c;
    }
    return chosen;
  }
  float max_scaled = -INFINITY;
  for (int c = 0; c < top_k; ++c) {
    max_scaled = fmaxf(max_scaled, __fdiv_rn(slot_scores[c], temperature));
  }
  float sum = 0.0f;
  for (int c = 0; c < top_k; ++c) {
    slot_scores[c] = expf(__fsub_rn(__fdiv_rn(slot_scores[c], temperature), max_scaled));
    sum = __fadd_rn(sum, slot_scores[c]);
  }
  for (int c = 0; c < top_k; ++c) probs[c] = slot_scores[c] = __fdiv_rn(slot_scores[c], sum);
  // Inverse CDF; the last candidate takes any rounding shortfall of the cumulative sum.
  float cumulative = 0.0f;
  for (int c = 0; c < top_k; ++c) {
    cumulative = __fadd_rn(cumulative, slot_scores[c]);
    if (uniform < cumulative) return c;
  }
  return top_k - 1;
}

// Slot s's scores after token `prev`: every thread gathers the gated predecessor row
// pred[prev] * hp[s] into `gated` ([rank]) and the slot's successor rows into `succ` ([top_k]
// [rank + 1]), then thread c < top_k returns candidate c's unary logit plus its edge, summed over
// the rank in index order as the CPU op (other threads' results mean nothing). Has a barrier.
__device__ inline float SlotScore(const Args& a, int s, int32_t prev, float* gated, float* succ) {
  const int tid = threadIdx.x, row_stride = a.rank + 1;
  const float* hp = a.hidden_projection + static_cast<int64_t>(s) * a.rank;
  for (int r = tid; r < a.rank; r += kThreads) {
    gated[r] = __fmul_rn(Entry(a.predecessor, a.predecessor_bf16, prev, r, a.rank), hp[r]);
  }
  const int32_t* cand = a.candidate_ids + s * a.top_k;
  for (int idx = tid; idx < a.top_k * a.rank; idx += kThreads) {
    const int c = idx / a.rank, r = idx % a.rank;
    succ[c * row_stride + r] = Entry(a.successor, a.successor_bf16, cand[c], r, a.rank);
  }
  __syncthreads();
  if (tid >= a.top_k) return 0.0f;
  const float* row = succ + tid * row_stride;
  float edge = 0.0f;
  for (int r = 0; r < a.rank; ++r) edge = __fadd_rn(edge, __fmul_rn(gated[r], row[r]));
  return __fadd_rn(a.unary[s * a.top_k + tid], edge);
}

__global__ void __launch_bounds__(kThreads) SelectorWalkKernel(Args a) {
  extern __shared__ float smem[];
  const int row_stride = a.rank + 1;
  float* gated = smem;                               // [rank]
  float* succ = gated + a.rank;                      // [top_k][rank + 1]
  float* slot_scores = succ + a.top_k * row_stride;  // [top_k], then the slot's probabilities
  float* uniforms = slot_scores + a.top_k;           // [kMaxSlots]
  int* flags = reinterpret_cast<int*>(uniforms + kMaxSlots);  // [0] a bad id, [1] prev
  const int tid = threadIdx.x;
  const bool sampled = a.temperature > 0.0f;
  const int total = a.slots * a.top_k;

  if (tid == 0) {
    flags[0] = 0;
    flags[1] = a.anchor_id;
  }
  // Constant indices: a run-time index into the parameters would copy them to local memory.
#pragma unroll
  for (int i = 0; i < kMaxSlots; ++i) {
    if (tid == i) uniforms[i] = a.uniforms[i];
  }
  __syncthreads();
  for (int i = tid; i < total; i += kThreads) {
    const int32_t id = a.candidate_ids[i];
    if (id < 0 || id >= a.vocab) atomicOr(&flags[0], 1);
  }
  __syncthreads();
  if (flags[0] != 0) {  // The whole block leaves together.
    for (int i = tid; i < a.slots; i += kThreads) a.proposals[i] = -1;
    for (int i = tid; i < total; i += kThreads) {
      a.scores[i] = __int_as_float(0x7fc00000);
      if (sampled) a.probabilities[i] = __int_as_float(0x7fc00000);
    }
    return;
  }

  for (int s = 0; s < a.slots; ++s) {
    const int32_t* cand = a.candidate_ids + s * a.top_k;
    const float score = SlotScore(a, s, flags[1], gated, succ);
    if (tid < a.top_k) {
      slot_scores[tid] = score;
      a.scores[s * a.top_k + tid] = score;
    }
    __syncthreads();
    if (tid == 0) {
      const int chosen = Choose(slot_scores, a.top_k, a.temperature, uniforms[s],
                                sampled ? a.probabilities + s * a.top_k : nullptr);
      a.proposals[s] = cand[chosen];
      flags[1] = cand[chosen];
    }
    __syncthreads();
  }
}

// Grid (slots * top_k): block (s, i) writes table[s, i, :], the scores of slot s's candidates
// after candidate i of slot s - 1 (the anchor for slot 0), with the walk's per-slot arithmetic.
__global__ void __launch_bounds__(kThreads) SelectorScoreTableKernel(Args a, float* table) {
  extern __shared__ float smem[];
  float* gated = smem;           // [rank]
  float* succ = gated + a.rank;  // [top_k][rank + 1]
  const int tid = threadIdx.x;
  const int s = blockIdx.x / a.top_k, i = blockIdx.x % a.top_k;
  const int32_t* cand = a.candidate_ids + s * a.top_k;
  const int32_t prev = s == 0 ? a.anchor_id : a.candidate_ids[(s - 1) * a.top_k + i];
  bool bad = prev < 0 || prev >= a.vocab;
  for (int c = 0; c < a.top_k; ++c) bad = bad || cand[c] < 0 || cand[c] >= a.vocab;
  if (bad) {  // No codebook row is read for an id outside the vocabulary.
    for (int c = tid; c < a.top_k; c += kThreads) {
      table[static_cast<int64_t>(blockIdx.x) * a.top_k + c] = __int_as_float(0x7fc00000);
    }
    return;
  }
  const float score = SlotScore(a, s, prev, gated, succ);
  if (tid < a.top_k) table[static_cast<int64_t>(blockIdx.x) * a.top_k + tid] = score;
}

}  // namespace twinspan::cuda::selector_kernel

#endif  // TWINSPAN_KERNELS_CUDA_CANDIDATE_SELECTOR_KERNEL_CUH_
