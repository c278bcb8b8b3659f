// Device code of attention. A block of 256 threads owns one (row, kv head) and all `group` query
// heads reading that kv head. Per chunk of up to 128 keys:
//   1. scores: warp w takes keys w, w + 8, ...; lane l holds K[d] for d = l + 32j in registers and
//      each head's dot is sum_j q[d] K[d] (fma, j ascending) then the warp butterfly, times scale
//      (4 keys x 8 heads reduced at once by WarpSumScatter32, the butterfly's bits);
//   2. per head (one warp each): max, p = exp(s - max), sum of p (lane-strided, then butterfly);
//   3. P.V: thread t owns dim t % D and keys k = t / D (mod 256 / D), fma in k order, and the
//      256 / D partial sums are added in index order.
// The chunk's (max, sum, P.V) then merge into the running state with the CPU op's online-softmax
// step (new max; old and chunk scales by exp; acc * old + chunk * new), chunk by chunk in position
// order: in the block itself (FusedKernel) or, with the chunks on separate blocks (ChunkKernel),
// by MergeKernel from the per-chunk partials in the workspace. Both use the same device functions.
// A tree window (kTree) reads the same keys through a slot map: positions from tree_base on are the
// row's ancestors' slots (TreeSlots), so a row's arithmetic is its path's chain's.
#ifndef TWINSPAN_KERNELS_CUDA_ATTENTION_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_ATTENTION_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/host_array.cuh"
#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/reduce.cuh"

namespace twinspan::cuda::attention_kernel {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMinBlocks = 3;  // Blocks an SM keeps: registers capped at 85 a thread.
constexpr int kChunk = 128;    // cpu::kAttentionKeyChunk
constexpr int kMaxRows = 256;
constexpr int kMaxGroup = 16;
constexpr int kMaxGroupDims = 2048;
constexpr int kMaxHeadDim = 256;
constexpr int kGroupTile = 8;  // Heads scored, and whose P.V accumulate, together.
constexpr int kKeyBatch = 4;   // Keys a warp loads before scoring them.
static_assert(kKeyBatch * kGroupTile == 32, "a warp reduces one score per lane");
constexpr int kValueBatch = 16;     // Keys whose V a thread loads before accumulating them.
constexpr int kMaxTreeDepth = 128;  // Ancestors (itself included) a tree row may have.

struct Params {
  const float* q = nullptr;  // Row 0 of this launch.
  int64_t q_stride = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t row_size = 0;  // kv_heads * head_dim
  int num_heads = 0;
  int head_dim = 0;
  int group = 0;
  float scale = 0.0f;
  bool causal = true;
  int64_t window = 0;
  int64_t num_keys = 0;
  float* partials = nullptr;  // ChunkKernel: [rows][num_heads][chunks][head_dim + 2]
  int64_t chunks = 0;         // ceil(num_keys / kChunk)
  HostArray<int64_t, kMaxRows> positions;
  // kTree: the rows' first slot (the committed length) and each row's parent row in this launch.
  int64_t tree_base = 0;
  HostArray<int16_t, kMaxRows> parents;
};

struct Shared {
  float q[kMaxGroupDims];                   // [group][D]
  alignas(16) float p[kMaxGroup * kChunk];  // [group][kChunk]: scores, then probabilities.
  float part[kThreads * kMaxGroup];         // [256 / D][group][D] partial P.V sums.
  float acc[kMaxGroupDims];                 // [group][D] running output (FusedKernel).
  float chunk_max[kMaxGroup], chunk_sum[kMaxGroup];
  float run_max[kMaxGroup], run_sum[kMaxGroup];
  int32_t tree_slot[kMaxTreeDepth];  // kTree: slot of position tree_base + j for the block's row
};

// kTree: the slots of `row`'s ancestors, root first, itself last, by thread 0. Ends with a barrier.
template <bool kTree>
__device__ __forceinline__ void TreeSlots(const Params& p, Shared& s, int row) {
  if constexpr (kTree) {
    if (threadIdx.x == 0) {
      int node = row;
      for (int64_t j = p.positions.v[row] - p.tree_base; j >= 0; --j) {
        s.tree_slot[j] = static_cast<int32_t>(p.tree_base + node);
        node = p.parents.v[node];
      }
    }
    __syncthreads();
  }
}

// Where the key of absolute position `pos` lives: slot pos, or (kTree) an ancestor's slot.
template <bool kTree>
__device__ __forceinline__ int64_t KeySlot(const Params& p, const Shared& s, int64_t pos) {
  if constexpr (kTree) {
    return pos < p.tree_base ? pos : s.tree_slot[pos - p.tree_base];
  } else {
    return pos;
  }
}

// Visible key range [lo, hi) of a row at `position`, as the CPU op's VisibleKeys.
__device__ __forceinline__ void VisibleKeys(const Params& p, int64_t position, int64_t* lo,
                                            int64_t* hi) {
  const int64_t from = p.window > 0 ? max(int64_t{0}, position - p.window + 1) : 0;
  *lo = from;
  if (p.causal) {
    *hi = position + 1;
  } else {
    *hi = p.window > 0 ? min(p.num_keys, position + p.window) : p.num_keys;
  }
}

// One cache element as float; T is uint16_t (bf16 bits) or float, fixed at compile time so a
// batch of loads issues straight-line, all in flight before the first use.
template <typename T>
__device__ __forceinline__ float LoadKv(const T* base, int64_t i) {
  if constexpr (sizeof(T) == 2) {
    return __uint_as_float(static_cast<uint32_t>(base[i]) << 16);
  } else {
    return base[i];
  }
}

// The online-softmax step's scales: running max m and chunk max c -> new max, exp(m - new),
// exp(c - new).
__device__ __forceinline__ void MergeScales(float run_max, float chunk_max, float* new_max,
                                            float* old_scale, float* chunk_scale) {
  *new_max = fmaxf(run_max, chunk_max);
  *old_scale = expf(__fsub_rn(run_max, *new_max));  // 0 for the first chunk (run_max = -inf).
  *chunk_scale = expf(__fsub_rn(chunk_max, *new_max));
}

__device__ __forceinline__ float MergeValue(float run, float old_scale, float chunk,
                                            float chunk_scale) {
  return __fadd_rn(__fmul_rn(run, old_scale), __fmul_rn(chunk, chunk_scale));
}

__device__ __forceinline__ void LoadQuery(const Params& p, Shared& s, int row, int kv_head) {
  const int gd = p.group * p.head_dim;
  const float* q = p.q + row * p.q_stride + static_cast<int64_t>(kv_head) * gd;
  for (int i = threadIdx.x; i < gd; i += kThreads) s.q[i] = q[i];
}

// One chunk's partials for keys [a, a + n); calls emit(g, d, g * D + d, P.V value) once per
// query value after chunk_max / chunk_sum are in shared memory. Ends without a barrier. Loads of
// kKeyBatch keys (scores) and kValueBatch keys (P.V) are issued before their first use, from
// clamped in-range addresses; the arithmetic per (head, key) and per (head, dim) is unchanged.
template <int kDpl, typename T, bool kTree, typename Emit>
__device__ __forceinline__ void ChunkPartial(const Params& p, Shared& s, int kv_head, int64_t a,
                                             int n, Emit emit) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int D = p.head_dim, G = p.group;
  // Key i of the chunk (position a + i) starts at kb + KeyRow(i) * row_size.
  const int64_t first = kTree ? 0 : a;
  const T* kb = static_cast<const T*>(p.k) + first * p.row_size + static_cast<int64_t>(kv_head) * D;
  const T* vb = static_cast<const T*>(p.v) + first * p.row_size + static_cast<int64_t>(kv_head) * D;
  const auto key_row = [&](int64_t i) -> int64_t {
    if constexpr (kTree) {
      return KeySlot<kTree>(p, s, a + i);
    } else {
      return i;
    }
  };
  for (int k0 = warp; k0 < n; k0 += kWarps * kKeyBatch) {
    float kd[kKeyBatch][kDpl];
#pragma unroll
    for (int b = 0; b < kKeyBatch; ++b) {
      const int64_t key = key_row(min(k0 + b * kWarps, n - 1));
#pragma unroll
      for (int j = 0; j < kDpl; ++j) {
        kd[b][j] = LoadKv(kb, key * p.row_size + min(lane + 32 * j, D - 1));
      }
    }
    for (int g0 = 0; g0 < G; g0 += kGroupTile) {
      float dot[kKeyBatch * kGroupTile];  // [key b][head g0 + gi]
#pragma unroll
      for (int i = 0; i < kKeyBatch * kGroupTile; ++i) dot[i] = 0.0f;
#pragma unroll
      for (int j = 0; j < kDpl; ++j) {
        const int d = min(lane + 32 * j, D - 1);
        const bool in = lane + 32 * j < D;
#pragma unroll
        for (int gi = 0; gi < kGroupTile; ++gi) {
          const float q = s.q[min(g0 + gi, G - 1) * D + d];
#pragma unroll
          for (int b = 0; b < kKeyBatch; ++b) {
            // Heads past G and dims past D add nothing: their lanes keep the exact sums.
            if (in && g0 + gi < G) {
              dot[b * kGroupTile + gi] = __fmaf_rn(q, kd[b][j], dot[b * kGroupTile + gi]);
            }
          }
        }
      }
      const float sum = WarpSumScatter32(dot);  // lane: key lane / 8, head g0 + lane % 8
      const int g = g0 + lane % kGroupTile, k = k0 + lane / kGroupTile * kWarps;
      if (g < G && k < n) s.p[g * kChunk + k] = __fmul_rn(sum, p.scale);
    }
  }
  __syncthreads();
  for (int g = warp; g < G; g += kWarps) {
    float* scores = s.p + g * kChunk;
    float m = -INFINITY;
    for (int k = lane; k < n; k += 32) m = fmaxf(m, scores[k]);
    m = WarpMax(m);
    float sum = 0.0f;
    for (int k = lane; k < n; k += 32) {
      const float e = expf(__fsub_rn(scores[k], m));
      scores[k] = e;
      sum = __fadd_rn(sum, e);
    }
    sum = WarpSum(sum);
    if (lane == 0) {
      s.chunk_max[g] = m;
      s.chunk_sum[g] = sum;
    }
  }
  __syncthreads();
  const int splits = D >= kThreads ? 1 : kThreads / D;
  const int d = threadIdx.x % D, split = threadIdx.x / D;
  if (threadIdx.x < splits * D) {
    for (int g0 = 0; g0 < G; g0 += kGroupTile) {
      float acc[kGroupTile];
#pragma unroll
      for (int gi = 0; gi < kGroupTile; ++gi) acc[gi] = 0.0f;
      for (int k0 = split; k0 < n; k0 += splits * kValueBatch) {
        float v[kValueBatch];
#pragma unroll
        for (int b = 0; b < kValueBatch; ++b) {
          v[b] = LoadKv(vb, key_row(min(k0 + b * splits, n - 1)) * p.row_size + d);
        }
        if (splits == 1) {  // Consecutive keys: each head's probabilities 4 at a time.
#pragma unroll
          for (int b4 = 0; b4 < kValueBatch; b4 += 4) {
#pragma unroll
            for (int gi = 0; gi < kGroupTile; ++gi) {
              if (g0 + gi >= G) continue;
              const float4 pv =
                  *reinterpret_cast<const float4*>(&s.p[(g0 + gi) * kChunk + k0 + b4]);
              const float pk[4] = {pv.x, pv.y, pv.z, pv.w};
#pragma unroll
              for (int b = 0; b < 4; ++b) {
                if (k0 + b4 + b < n) acc[gi] = __fmaf_rn(pk[b], v[b4 + b], acc[gi]);
              }
            }
          }
          continue;
        }
#pragma unroll
        for (int b = 0; b < kValueBatch; ++b) {
          const int k = k0 + b * splits;
          if (k < n) {
#pragma unroll
            for (int gi = 0; gi < kGroupTile; ++gi) {
              if (g0 + gi < G) acc[gi] = __fmaf_rn(s.p[(g0 + gi) * kChunk + k], v[b], acc[gi]);
            }
          }
        }
      }
#pragma unroll
      for (int gi = 0; gi < kGroupTile; ++gi) {
        if (g0 + gi < G) s.part[(split * G + g0 + gi) * D + d] = acc[gi];
      }
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < G * D; i += kThreads) {
    const int g = i / D, dd = i % D;
    float value = s.part[g * D + dd];
    for (int j = 1; j < splits; ++j) value = __fadd_rn(value, s.part[(j * G + g) * D + dd]);
    emit(g, dd, i, value);
  }
}

// Grid (rows, kv_heads): the block walks its row's chunks and merges them as it goes.
template <int kDpl, typename T, bool kTree>
__global__ void __launch_bounds__(kThreads, kMinBlocks) FusedKernel(const Params p) {
  StartDependent();
  __shared__ Shared s;
  const int row = blockIdx.x, kv_head = blockIdx.y;
  const int G = p.group, gd = p.group * p.head_dim;
  int64_t lo, hi;
  VisibleKeys(p, p.positions.v[row], &lo, &hi);
  TreeSlots<kTree>(p, s, row);
  LoadQuery(p, s, row, kv_head);
  for (int i = threadIdx.x; i < gd; i += kThreads) s.acc[i] = 0.0f;
  if (threadIdx.x < G) {
    s.run_max[threadIdx.x] = -INFINITY;
    s.run_sum[threadIdx.x] = 0.0f;
  }
  __syncthreads();
  for (int64_t c0 = lo - lo % kChunk; c0 < hi; c0 += kChunk) {
    const int64_t a = max(lo, c0);
    const int n = static_cast<int>(min(hi, c0 + kChunk) - a);
    ChunkPartial<kDpl, T, kTree>(p, s, kv_head, a, n, [&](int g, int, int i, float value) {
      float new_max, old_scale, chunk_scale;
      MergeScales(s.run_max[g], s.chunk_max[g], &new_max, &old_scale, &chunk_scale);
      s.acc[i] = MergeValue(s.acc[i], old_scale, value, chunk_scale);
    });
    __syncthreads();
    if (threadIdx.x < G) {
      const int g = threadIdx.x;
      float new_max, old_scale, chunk_scale;
      MergeScales(s.run_max[g], s.chunk_max[g], &new_max, &old_scale, &chunk_scale);
      s.run_sum[g] = MergeValue(s.run_sum[g], old_scale, s.chunk_sum[g], chunk_scale);
      s.run_max[g] = new_max;
    }
    __syncthreads();
  }
  float* out = p.out + row * p.out_stride + static_cast<int64_t>(kv_head) * gd;
  for (int i = threadIdx.x; i < gd; i += kThreads) {
    out[i] = __fmul_rn(s.acc[i], __fdiv_rn(1.0f, s.run_sum[i / p.head_dim]));
  }
}

// Grid (chunks, rows, kv_heads): one chunk of one row's keys; writes its partials.
template <int kDpl, typename T, bool kTree>
__global__ void __launch_bounds__(kThreads, kMinBlocks) ChunkKernel(const Params p) {
  StartDependent();
  __shared__ Shared s;
  const int64_t chunk = blockIdx.x;
  const int row = blockIdx.y, kv_head = blockIdx.z;
  int64_t lo, hi;
  VisibleKeys(p, p.positions.v[row], &lo, &hi);
  if (chunk < lo / kChunk || chunk > (hi - 1) / kChunk) return;
  TreeSlots<kTree>(p, s, row);
  LoadQuery(p, s, row, kv_head);
  __syncthreads();
  const int64_t a = max(lo, chunk * kChunk);
  const int n = static_cast<int>(min(hi, (chunk + 1) * kChunk) - a);
  const int64_t per_head = p.chunks * (p.head_dim + 2);
  float* base = p.partials +
                (static_cast<int64_t>(row) * p.num_heads + kv_head * p.group) * per_head +
                chunk * (p.head_dim + 2);
  ChunkPartial<kDpl, T, kTree>(
      p, s, kv_head, a, n, [&](int g, int d, int, float value) { base[g * per_head + d] = value; });
  if (threadIdx.x < p.group) {
    base[threadIdx.x * per_head + p.head_dim] = s.chunk_max[threadIdx.x];
    base[threadIdx.x * per_head + p.head_dim + 1] = s.chunk_sum[threadIdx.x];
  }
}

// Grid (rows, num_heads), head_dim threads: merges a row's chunk partials in position order.
__global__ void __launch_bounds__(kMaxHeadDim) MergeKernel(const Params p) {
  StartDependent();
  const int row = blockIdx.x, head = blockIdx.y, d = threadIdx.x;
  int64_t lo, hi;
  VisibleKeys(p, p.positions.v[row], &lo, &hi);
  const int D = p.head_dim;
  const float* base =
      p.partials + (static_cast<int64_t>(row) * p.num_heads + head) * p.chunks * (D + 2);
  float run_max = -INFINITY, run_sum = 0.0f, acc = 0.0f;
  for (int64_t c = lo / kChunk; c <= (hi - 1) / kChunk; ++c) {
    const float* part = base + c * (D + 2);
    float new_max, old_scale, chunk_scale;
    MergeScales(run_max, part[D], &new_max, &old_scale, &chunk_scale);
    run_sum = MergeValue(run_sum, old_scale, part[D + 1], chunk_scale);
    acc = MergeValue(acc, old_scale, part[d], chunk_scale);
    run_max = new_max;
  }
  p.out[row * p.out_stride + static_cast<int64_t>(head) * D + d] =
      __fmul_rn(acc, __fdiv_rn(1.0f, run_sum));
}

}  // namespace twinspan::cuda::attention_kernel

#endif  // TWINSPAN_KERNELS_CUDA_ATTENTION_KERNEL_CUH_
