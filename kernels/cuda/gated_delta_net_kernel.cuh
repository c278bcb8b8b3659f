// Device code of GatedDeltaNet / GatedDeltaNetKeep, the recurrent gated delta rule.
//
// Column j of a head's state S [k_dim, v_dim] evolves on its own: mem_j = sum_i S_ij k_i and
// out_j = sum_i S_ij q_i need only that column, k, q and v_j. So threads own state columns and
// keep them in registers for the whole window: the state is read once and written once a call.
//
// RegisterKernel (k_dim 64 or 128, v_dim % 4 == 0; all Qwen3.5 sizes): a half-warp owns 4 columns
// (one float4 a row of S), its 16 lanes split k_dim into 16 runs of k_dim / 16 rows; a block of 4
// warps owns 32 columns, the grid is (v_dim / 32, v_heads): 192 blocks and 24,576 threads of 32
// state floats each for the 27B. Sums over k_dim run in i order inside a lane, then a fixed
// butterfly over the 16 lanes; the l2 norms of q and k likewise. Bytes a call for the 27B: the
// state 3,145,728 read + 3,145,728 written, and per row qkv 40,960 + g, beta 384 + out 24,576;
// q and k, shared by 3 value heads and 4 column blocks, come from L2. Rows go in chunks of 16:
// the block first loads a chunk's inputs and norms its q and k rows (each half-warp two rows at
// once) into shared memory, so the serial chain of rows has no global load or norm in it.
//
// ColumnKernel (any other shape, k_dim <= 384): one thread a column, its column in shared memory
// ([k_dim][32] a warp), every sum in the CPU op's index order.
//
// Every rounding is explicit (__fmul_rn, __fadd_rn: no contraction), so a row's bits depend only
// on the state it starts from and its inputs, never on the window length or where the state
// lives: windows, single rows and replays agree bit for bit.
#ifndef TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::gdn_kernel {

constexpr int kParts = 16;  // Lanes that split k_dim in RegisterKernel.
constexpr int kRegisterThreads = 128;
constexpr int kRows = 16;            // Rows RegisterKernel stages in shared memory at a time.
constexpr int kBlockColumns = 32;    // State columns a block owns, both kernels.
constexpr int kMaxColumnKDim = 384;  // ColumnKernel's [k_dim][32] tile fits 48 KB.

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

// Stages rows [t0, t0 + n) (n <= kRows): half-warp w norms rows w and w + 8 of the chunk, lane
// `part` summing its k_dim / 16 values in order, then the butterfly, as every row always has.
// Every load is issued before the first norm, so the chunk waits for memory once.
template <int kKDim>
__device__ inline void StageChunk(const RecurrentParams& p, int64_t t0, int n, int kh, int h,
                                  int block_col, ChunkInputs<kKDim>& c) {
  constexpr int kSlice = kKDim / kParts, kHalfWarps = kRegisterThreads / kParts;
  constexpr int kVPerThread = kRows * kBlockColumns / kRegisterThreads;
  const int part = threadIdx.x & (kParts - 1), hw = threadIdx.x / kParts, i0 = part * kSlice;
  float v[kVPerThread];
#pragma unroll
  for (int u = 0; u < kVPerThread; ++u) {
    const int e = threadIdx.x + u * kRegisterThreads;
    const int r = e / kBlockColumns, col = block_col + e % kBlockColumns;
    v[u] = r < n && col < p.v_dim ? p.qkv[(t0 + r) * p.qkv_width + 2 * p.k_heads * kKDim +
                                          static_cast<int64_t>(h) * p.v_dim + col]
                                  : 0.0f;
  }
  const bool gate = threadIdx.x < n;
  const float g = gate ? p.g[(t0 + threadIdx.x) * p.v_heads + h] : 0.0f;
  const float beta = gate ? p.beta[(t0 + threadIdx.x) * p.v_heads + h] : 0.0f;
  float q[kRows / kHalfWarps][kSlice], k[kRows / kHalfWarps][kSlice];
#pragma unroll
  for (int u = 0; u < kRows / kHalfWarps; ++u) {
    const int r = u * kHalfWarps + hw;
    const float* row = p.qkv + (t0 + (r < n ? r : 0)) * p.qkv_width;
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

template <int kKDim>
__global__ void __launch_bounds__(kRegisterThreads) RegisterKernel(RecurrentParams p) {
  StartDependent();
  constexpr int kSlice = kKDim / kParts;
  __shared__ __align__(16) ChunkInputs<kKDim> chunk;
  const int part = threadIdx.x & (kParts - 1);
  const int h = blockIdx.y;
  const int block_col = blockIdx.x * kBlockColumns;
  const int c0 = (threadIdx.x / kParts) * 4;  // The thread's first column in the block.
  const int j0 = block_col + c0;
  const bool active = j0 < p.v_dim;  // v_dim % 4 == 0: a float4 is wholly in or out.
  const int kh = h / (p.v_heads / p.k_heads);
  const int i0 = part * kSlice;
  const int64_t base = (static_cast<int64_t>(h) * kKDim + i0) * p.v_dim + j0;

  float s[kSlice][4];
#pragma unroll
  for (int r = 0; r < kSlice; ++r) {
    const float4 v = active ? *reinterpret_cast<const float4*>(p.state_in + base +
                                                               static_cast<int64_t>(r) * p.v_dim)
                            : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    s[r][0] = v.x, s[r][1] = v.y, s[r][2] = v.z, s[r][3] = v.w;
  }

  for (int64_t t0 = 0; t0 < p.rows; t0 += kRows) {
    const int n = p.rows - t0 < kRows ? static_cast<int>(p.rows - t0) : kRows;
    __syncthreads();  // The last chunk's readers are done.
    StageChunk<kKDim>(p, t0, n, kh, h, block_col, chunk);
    __syncthreads();
    for (int r = 0; r < n; ++r) {
      const int64_t t = t0 + r;
      if (t == p.keep_rows && p.state_out != nullptr)
        StoreState(p.state_out, base, p.v_dim, active, s);
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
          *reinterpret_cast<float4*>(p.out + (t * p.v_heads + h) * p.v_dim + j0) =
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
  }
  if (p.keep_rows == p.rows && p.state_out != nullptr) {
    StoreState(p.state_out, base, p.v_dim, active, s);
  }
}

// One warp a block, one thread a state column; the column lives in shared memory.
__global__ void __launch_bounds__(32) ColumnKernel(RecurrentParams p) {
  StartDependent();
  extern __shared__ float tile[];  // [k_dim][32]
  const int lane = threadIdx.x;
  const int h = blockIdx.y;
  const int j = blockIdx.x * kBlockColumns + lane;
  const bool active = j < p.v_dim;
  const int kh = h / (p.v_heads / p.k_heads);
  const int64_t base = static_cast<int64_t>(h) * p.k_dim * p.v_dim + j;
  for (int i = 0; i < p.k_dim; ++i) {
    tile[i * 32 + lane] = active ? p.state_in[base + static_cast<int64_t>(i) * p.v_dim] : 0.0f;
  }
  auto store = [&]() {
    if (!active) return;
    for (int i = 0; i < p.k_dim; ++i) {
      p.state_out[base + static_cast<int64_t>(i) * p.v_dim] = tile[i * 32 + lane];
    }
  };
  for (int64_t t = 0; t < p.rows; ++t) {
    if (t == p.keep_rows && p.state_out != nullptr) store();
    const float* row = p.qkv + t * p.qkv_width;
    const float* q = row + kh * p.k_dim;
    const float* k = row + (p.k_heads + kh) * p.k_dim;
    float qq = 0.0f, kk = 0.0f;
    for (int i = 0; i < p.k_dim; ++i) {
      qq = __fadd_rn(qq, __fmul_rn(q[i], q[i]));
      kk = __fadd_rn(kk, __fmul_rn(k[i], k[i]));
    }
    const float q_inv = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(qq, 1e-6f)));
    const float k_inv = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(kk, 1e-6f)));
    const float decay = expf(p.g[t * p.v_heads + h]);
    const float b = p.beta[t * p.v_heads + h];
    float mem = 0.0f;
    for (int i = 0; i < p.k_dim; ++i) {
      const float s = __fmul_rn(tile[i * 32 + lane], decay);
      tile[i * 32 + lane] = s;
      mem = __fadd_rn(mem, __fmul_rn(s, __fmul_rn(k[i], k_inv)));
    }
    const float v =
        active ? row[2 * p.k_heads * p.k_dim + static_cast<int64_t>(h) * p.v_dim + j] : 0.0f;
    const float delta = __fmul_rn(__fsub_rn(v, mem), b);
    float o = 0.0f;
    for (int i = 0; i < p.k_dim; ++i) {
      const float s = __fadd_rn(tile[i * 32 + lane], __fmul_rn(__fmul_rn(k[i], k_inv), delta));
      tile[i * 32 + lane] = s;
      o = __fadd_rn(o, __fmul_rn(s, __fmul_rn(__fmul_rn(q[i], q_inv), p.q_scale)));
    }
    if (p.out != nullptr && active) p.out[(t * p.v_heads + h) * p.v_dim + j] = o;
  }
  if (p.keep_rows == p.rows && p.state_out != nullptr) store();
}

}  // namespace twinspan::cuda::gdn_kernel

#endif  // TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_KERNEL_CUH_
