// The per-row step of the recurrent gated delta rule, shared by the chain kernels
// (gated_delta_net_kernel.cuh) and the tree kernels (gated_delta_net_tree_kernel.cuh): parameters,
// the staged chunk of row inputs, the state's loads and stores, and one row's update in each
// kernel's layout. See gated_delta_net_kernel.cuh for the algorithm.
#ifndef TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_STEP_CUH_
#define TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_STEP_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/host_array.cuh"

namespace twinspan::cuda::gdn_kernel {

constexpr int kParts = 16;  // Lanes that split k_dim in RegisterKernel.
constexpr int kRegisterThreads = 128;
constexpr int kRows = 16;            // Rows RegisterKernel stages in shared memory at a time.
constexpr int kBlockColumns = 32;    // State columns a block owns, both kernels.
constexpr int kMaxColumnKDim = 384;  // ColumnKernel's [k_dim][32] tile fits 48 KB.

constexpr int kMaxTreeRows = 256;   // Rows of a tree window.
constexpr int16_t kContinue = -2;   // TreeSchedule::load: the state is in registers already
constexpr int16_t kFromStart = -1;  // TreeSchedule::load: the window's start state

struct RecurrentParams {
  const float* qkv;
  const float* g;
  const float* beta;
  int64_t rows;
  int64_t qkv_width;  // 2 * k_heads * k_dim + v_heads * v_dim
  int k_heads, v_heads, k_dim, v_dim;
  float q_scale;  // 1 / sqrt(k_dim), computed on the host as the CPU op does.
  const float* state_in;
  int64_t keep_rows;
  float* state_out;  // May equal state_in, or null.
  float* out;        // May be null.
};

// The depth-first walk of a tree window (gated_delta_net_tree.cu builds it).
struct TreeSchedule {
  HostArray<int16_t, kMaxTreeRows> order;  // Step -> window row.
  HostArray<int16_t, kMaxTreeRows> load;   // Step: kContinue, kFromStart or a saved slot.
  HostArray<int16_t, kMaxTreeRows> save;   // Step: the slot its state goes to, or -1.
  float* saved = nullptr;                  // [slots, v_heads, k_dim, v_dim]
};

// Chain windows stage rows t0 .. t0 + n - 1; a tree's rows in its schedule's order.
struct ChainRows {
  __device__ int64_t operator()(int64_t t) const { return t; }
};
struct TreeRows {
  const TreeSchedule* schedule;
  __device__ int64_t operator()(int64_t t) const { return schedule->order.v[t]; }
};

// Sum over the 16 lanes of a half-warp; every lane gets the same bits (addition commutes).
__device__ inline float HalfWarpSum(float v) {
#pragma unroll
  for (int offset = 1; offset < kParts; offset <<= 1) {
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  return v;
}

// A chunk's per-row inputs, staged in shared memory before its recurrence: the normed q and k of
// the key head, the block's v columns, exp(g) and beta. The rows' loads and norms then run in
// parallel, off the serial chain of rows, which reads only shared memory.
template <int kKDim>
struct ChunkInputs {
  float q[kRows][kKDim];
  float k[kRows][kKDim];
  float v[kRows][kBlockColumns];
  float decay[kRows];
  float beta[kRows];
};

template <int kSlice>
__device__ inline void StoreState(float* state, int64_t base, int v_dim, bool active,
                                  const float (&s)[kSlice][4]) {
  if (!active) return;
#pragma unroll
  for (int r = 0; r < kSlice; ++r) {
    *reinterpret_cast<float4*>(state + base + static_cast<int64_t>(r) * v_dim) =
        make_float4(s[r][0], s[r][1], s[r][2], s[r][3]);
  }
}

template <int kSlice>
__device__ inline void LoadState(const float* state, int64_t base, int v_dim, bool active,
                                 float (&s)[kSlice][4]) {
#pragma unroll
  for (int r = 0; r < kSlice; ++r) {
    const float4 v =
        active ? *reinterpret_cast<const float4*>(state + base + static_cast<int64_t>(r) * v_dim)
               : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    s[r][0] = v.x, s[r][1] = v.y, s[r][2] = v.z, s[r][3] = v.w;
  }
}

// Stages steps [t0, t0 + n) (n <= kRows), step t being row row_of(t): half-warp w norms rows w and
// w + 8 of the chunk, lane `part` summing its k_dim / 16 values in order, then the butterfly, as
// every row always has. Every load is issued before the first norm, so the chunk waits for memory
// once.
template <int kKDim, typename RowOf = ChainRows>
__device__ inline void StageChunk(const RecurrentParams& p, int64_t t0, int n, int kh, int h,
                                  int block_col, ChunkInputs<kKDim>& c, RowOf row_of = {}) {
  constexpr int kSlice = kKDim / kParts, kHalfWarps = kRegisterThreads / kParts;
  constexpr int kVPerThread = kRows * kBlockColumns / kRegisterThreads;
  const int part = threadIdx.x & (kParts - 1), hw = threadIdx.x / kParts, i0 = part * kSlice;
  float v[kVPerThread];
#pragma unroll
  for (int u = 0; u < kVPerThread; ++u) {
    const int e = threadIdx.x + u * kRegisterThreads;
    const int r = e / kBlockColumns, col = block_col + e % kBlockColumns;
    v[u] = r < n && col < p.v_dim ? p.qkv[row_of(t0 + r) * p.qkv_width + 2 * p.k_heads * kKDim +
                                          static_cast<int64_t>(h) * p.v_dim + col]
                                  : 0.0f;
  }
  const bool gate = threadIdx.x < n;
  const float g = gate ? p.g[row_of(t0 + threadIdx.x) * p.v_heads + h] : 0.0f;
  const float beta = gate ? p.beta[row_of(t0 + threadIdx.x) * p.v_heads + h] : 0.0f;
  float q[kRows / kHalfWarps][kSlice], k[kRows / kHalfWarps][kSlice];
#pragma unroll
  for (int u = 0; u < kRows / kHalfWarps; ++u) {
    const int r = u * kHalfWarps + hw;
    const float* row = p.qkv + row_of(t0 + (r < n ? r : 0)) * p.qkv_width;
#pragma unroll
    for (int m = 0; m < kSlice / 4; ++m) {
      const float4 a = reinterpret_cast<const float4*>(row + kh * kKDim + i0)[m];
      const float4 b = reinterpret_cast<const float4*>(row + (p.k_heads + kh) * kKDim + i0)[m];
      q[u][4 * m] = a.x, q[u][4 * m + 1] = a.y, q[u][4 * m + 2] = a.z, q[u][4 * m + 3] = a.w;
      k[u][4 * m] = b.x, k[u][4 * m + 1] = b.y, k[u][4 * m + 2] = b.z, k[u][4 * m + 3] = b.w;
    }
  }
#pragma unroll
  for (int u = 0; u < kRows / kHalfWarps; ++u) {
    const int r = u * kHalfWarps + hw;
    // l2 norms (eps 1e-6), then q scaled: x * inv * scale as the CPU op rounds it.
    float qq = 0.0f, kk = 0.0f;
#pragma unroll
    for (int i = 0; i < kSlice; ++i) {
      qq = __fadd_rn(qq, __fmul_rn(q[u][i], q[u][i]));
      kk = __fadd_rn(kk, __fmul_rn(k[u][i], k[u][i]));
    }
    qq = HalfWarpSum(qq);
    kk = HalfWarpSum(kk);
    const float q_inv = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(qq, 1e-6f)));
    const float k_inv = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(kk, 1e-6f)));
    if (r < n) {
#pragma unroll
      for (int i = 0; i < kSlice; ++i) {
        c.q[r][i0 + i] = __fmul_rn(__fmul_rn(q[u][i], q_inv), p.q_scale);
        c.k[r][i0 + i] = __fmul_rn(k[u][i], k_inv);
      }
    }
    if ((u + 1) * kHalfWarps >= n) break;  // Uniform: n is the block's.
  }
#pragma unroll
  for (int u = 0; u < kVPerThread; ++u) {
    const int e = threadIdx.x + u * kRegisterThreads;
    c.v[e / kBlockColumns][e % kBlockColumns] = v[u];
  }
  if (gate) {
    c.decay[threadIdx.x] = expf(g);
    c.beta[threadIdx.x] = beta;
  }
}

// One row of the register kernels: the staged chunk row r steps the state s in registers; the
// output goes to window row `row` when p.out is set.
template <int kKDim>
__device__ __forceinline__ void StepRegisterRow(const RecurrentParams& p,
                                                const ChunkInputs<kKDim>& chunk, int r, int64_t row,
                                                int h, int i0, int c0, int j0, bool active,
                                                int part, float (&s)[kKDim / kParts][4]) {
  constexpr int kSlice = kKDim / kParts;
  float qn[kSlice], kn[kSlice];
#pragma unroll
  for (int m = 0; m < kSlice / 4; ++m) {
    const float4 a = reinterpret_cast<const float4*>(&chunk.q[r][i0])[m];
    const float4 b = reinterpret_cast<const float4*>(&chunk.k[r][i0])[m];
    qn[4 * m] = a.x, qn[4 * m + 1] = a.y, qn[4 * m + 2] = a.z, qn[4 * m + 3] = a.w;
    kn[4 * m] = b.x, kn[4 * m + 1] = b.y, kn[4 * m + 2] = b.z, kn[4 * m + 3] = b.w;
  }
  const float decay = chunk.decay[r], beta = chunk.beta[r];

  // S *= exp(g); mem = S^T k.
  float mem[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int i = 0; i < kSlice; ++i) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      s[i][c] = __fmul_rn(s[i][c], decay);
      mem[c] = __fadd_rn(mem[c], __fmul_rn(s[i][c], kn[i]));
    }
  }
  float delta[4];
#pragma unroll
  for (int c = 0; c < 4; ++c)
    delta[c] = __fmul_rn(__fsub_rn(chunk.v[r][c0 + c], HalfWarpSum(mem[c])), beta);

  // S += k delta^T; out = S^T q.
  if (p.out != nullptr) {
    float o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < kSlice; ++i) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        s[i][c] = __fadd_rn(s[i][c], __fmul_rn(kn[i], delta[c]));
        o[c] = __fadd_rn(o[c], __fmul_rn(s[i][c], qn[i]));
      }
    }
#pragma unroll
    for (int c = 0; c < 4; ++c) o[c] = HalfWarpSum(o[c]);
    if (active && part == 0) {
      *reinterpret_cast<float4*>(p.out + (row * p.v_heads + h) * p.v_dim + j0) =
          make_float4(o[0], o[1], o[2], o[3]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kSlice; ++i) {
#pragma unroll
      for (int c = 0; c < 4; ++c) s[i][c] = __fadd_rn(s[i][c], __fmul_rn(kn[i], delta[c]));
    }
  }
}

// One row of the column kernels: window row `row` steps the column in `tile` ([k_dim][32]).
__device__ __forceinline__ void StepColumnRow(const RecurrentParams& p, float* tile, int lane,
                                              int h, int kh, int j, bool active, int64_t row) {
  const float* in = p.qkv + row * p.qkv_width;
  const float* q = in + kh * p.k_dim;
  const float* k = in + (p.k_heads + kh) * p.k_dim;
  float qq = 0.0f, kk = 0.0f;
  for (int i = 0; i < p.k_dim; ++i) {
    qq = __fadd_rn(qq, __fmul_rn(q[i], q[i]));
    kk = __fadd_rn(kk, __fmul_rn(k[i], k[i]));
  }
  const float q_inv = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(qq, 1e-6f)));
  const float k_inv = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(kk, 1e-6f)));
  const float decay = expf(p.g[row * p.v_heads + h]);
  const float b = p.beta[row * p.v_heads + h];
  float mem = 0.0f;
  for (int i = 0; i < p.k_dim; ++i) {
    const float s = __fmul_rn(tile[i * 32 + lane], decay);
    tile[i * 32 + lane] = s;
    mem = __fadd_rn(mem, __fmul_rn(s, __fmul_rn(k[i], k_inv)));
  }
  const float v =
      active ? in[2 * p.k_heads * p.k_dim + static_cast<int64_t>(h) * p.v_dim + j] : 0.0f;
  const float delta = __fmul_rn(__fsub_rn(v, mem), b);
  float o = 0.0f;
  for (int i = 0; i < p.k_dim; ++i) {
    const float s = __fadd_rn(tile[i * 32 + lane], __fmul_rn(__fmul_rn(k[i], k_inv), delta));
    tile[i * 32 + lane] = s;
    o = __fadd_rn(o, __fmul_rn(s, __fmul_rn(__fmul_rn(q[i], q_inv), p.q_scale)));
  }
  if (p.out != nullptr && active) p.out[(row * p.v_heads + h) * p.v_dim + j] = o;
}

// A column between the tile and a state buffer ([v_heads, k_dim, v_dim]).
__device__ __forceinline__ void LoadColumn(const float* state, int64_t base, int k_dim, int v_dim,
                                           bool active, int lane, float* tile) {
  for (int i = 0; i < k_dim; ++i) {
    tile[i * 32 + lane] = active ? state[base + static_cast<int64_t>(i) * v_dim] : 0.0f;
  }
}
__device__ __forceinline__ void StoreColumn(float* state, int64_t base, int k_dim, int v_dim,
                                            bool active, int lane, const float* tile) {
  if (!active) return;
  for (int i = 0; i < k_dim; ++i)
    state[base + static_cast<int64_t>(i) * v_dim] = tile[i * 32 + lane];
}

}  // namespace twinspan::cuda::gdn_kernel

#endif  // TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_STEP_CUH_
