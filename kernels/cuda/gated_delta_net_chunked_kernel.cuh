// Device code of GatedDeltaNetChunked: the chunked (WY) gated delta rule, all fp32.
//
// Per value head, within a chunk of C = 64 rows from state S0, with G_t = g_1 + ... + g_t,
// Gam_t = exp(G_t), q and k l2-normalised as the recurrent op does:
//   A[t][s] = beta_t exp(G_t - G_s) k_t.k_s (s < t),   T = (I + A)^-1 (unit lower triangular)
//   W = T diag(beta Gam) K,   U = T diag(beta) V,       Delta = U - W S0  (the rows' deltas)
//   out_t = Gam_t q_t S0 + sum_{s <= t} exp(G_t - G_s) (q_t.k_s) Delta_s
//   S_C = Gam_C S0 + sum_s exp(G_C - G_s) k_s Delta_s^T
// which is the recurrence S_t = exp(g_t) S_{t-1} + k_t delta_t^T unrolled over the chunk.
// A short last chunk is padded with rows of k = v = beta = g = 0, which add exact zeros.
//
// Three kernels per segment of up to 16 chunks (bounded workspace): NormalizeKernel (a warp per
// row and key head) writes normalised q and k; PrepareKernel (a block per chunk and value head)
// builds W, U, P = the masked decayed q.k and the decay vectors, none of which need S0;
// ScanKernel (a block per value head and 32 state columns, 192 blocks for the 27B) walks the
// segment's chunks in order with its [k_dim, 32] slice of the state in shared memory. Every sum
// runs in a fixed index order, so the bits depend only on the rows and the chunking. The scan
// stages each chunk's operands from L2 without overlapping them with compute (a known cost).
#ifndef TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_CHUNKED_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_CHUNKED_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

namespace twinspan::cuda::gdn_chunked_kernel {

constexpr int kChunk = 64;
constexpr int kSegmentChunks = 16;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kScanColumns = 32;
constexpr int kMaxKDim = 128;
constexpr int kDecayFloats = 2 * kChunk + 4;  // Gam_t, exp(G_C - G_t), Gam_C, padding.

// Pointers are offset to the segment: its row 0 is the segment's first row.
struct Params {
  const float* qkv;
  const float* g;
  const float* beta;
  int64_t rows;  // Rows of the segment.
  int64_t qkv_width;
  int k_heads, v_heads, k_dim, v_dim;
  float q_scale;
  int chunks;    // ceil(rows / kChunk)
  float* qn;     // [rows][k_heads][k_dim], scaled by q_scale
  float* kn;     // [rows][k_heads][k_dim]
  float* w;      // [chunks][v_heads][kChunk][k_dim]
  float* u;      // [chunks][v_heads][kChunk][v_dim]
  float* pm;     // [chunks][v_heads][kChunk][kChunk]
  float* decay;  // [chunks][v_heads][kDecayFloats]
  float* state;  // [v_heads][k_dim][v_dim]
  float* out;    // [rows][v_heads][v_dim]
};

inline size_t PrepareSmemBytes(int k_dim) {
  return sizeof(float) * (kChunk * (k_dim + 1) + 2 * kChunk * kChunk + 3 * kChunk);
}
inline size_t ScanSmemBytes(int k_dim) {
  return sizeof(float) * (kChunk * k_dim + k_dim * kScanColumns + kChunk * kScanColumns +
                          kChunk * kChunk + kDecayFloats);
}

// q and k of one row and key head, l2-normalised (eps 1e-6); q also scaled. A warp per item.
__global__ void __launch_bounds__(kThreads) NormalizeKernel(Params p) {
  const int lane = threadIdx.x & 31;
  const int64_t item = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (item >= p.rows * p.k_heads) return;  // Whole warps leave together.
  const int64_t t = item / p.k_heads;
  const int kh = static_cast<int>(item % p.k_heads);
  const float* q = p.qkv + t * p.qkv_width + kh * p.k_dim;
  const float* k = p.qkv + t * p.qkv_width + (p.k_heads + kh) * p.k_dim;
  float qq = 0.0f, kk = 0.0f;
  for (int i = lane; i < p.k_dim; i += 32) {
    qq = __fadd_rn(qq, __fmul_rn(q[i], q[i]));
    kk = __fadd_rn(kk, __fmul_rn(k[i], k[i]));
  }
#pragma unroll
  for (int offset = 16; offset >= 1; offset >>= 1) {
    qq = __fadd_rn(qq, __shfl_xor_sync(0xffffffffu, qq, offset));
    kk = __fadd_rn(kk, __shfl_xor_sync(0xffffffffu, kk, offset));
  }
  const float q_inv = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(qq, 1e-6f)));
  const float k_inv = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(kk, 1e-6f)));
  float* qo = p.qn + item * p.k_dim;
  float* ko = p.kn + item * p.k_dim;
  for (int i = lane; i < p.k_dim; i += 32) {
    qo[i] = __fmul_rn(__fmul_rn(q[i], q_inv), p.q_scale);
    ko[i] = __fmul_rn(k[i], k_inv);
  }
}

// W, U, P and the decay vectors of one chunk and value head.
__global__ void __launch_bounds__(kThreads) PrepareKernel(Params p) {
  extern __shared__ float smem[];
  const int kst = p.k_dim + 1;       // Padded rows: the A loop reads 32 rows at one column.
  float* ks = smem;                  // [C][k_dim + 1] normalised keys, zero past the last row
  float* as = ks + kChunk * kst;     // [C][C] A, then the W coefficients
  float* ts = as + kChunk * kChunk;  // [C][C] T, then the U coefficients
  float* gs = ts + kChunk * kChunk;  // [C] G_t
  float* bs = gs + kChunk;           // [C] beta_t
  float* gam = bs + kChunk;          // [C] Gam_t
  const int tid = threadIdx.x;
  const int ci = blockIdx.x, h = blockIdx.y;
  const int kh = h / (p.v_heads / p.k_heads);
  const int64_t t_first = static_cast<int64_t>(ci) * kChunk;
  const int n = static_cast<int>(p.rows - t_first < kChunk ? p.rows - t_first : kChunk);

  if (tid < kChunk) {
    gs[tid] = tid < n ? p.g[(t_first + tid) * p.v_heads + h] : 0.0f;
    bs[tid] = tid < n ? p.beta[(t_first + tid) * p.v_heads + h] : 0.0f;
  }
  for (int idx = tid; idx < kChunk * p.k_dim; idx += kThreads) {
    const int t = idx / p.k_dim, i = idx % p.k_dim;
    ks[t * kst + i] = t < n ? p.kn[((t_first + t) * p.k_heads + kh) * p.k_dim + i] : 0.0f;
  }
  __syncthreads();
  if (tid == 0) {
    float acc = 0.0f;
    for (int t = 0; t < kChunk; ++t) gs[t] = acc = __fadd_rn(acc, gs[t]);
  }
  __syncthreads();
  const int64_t block = static_cast<int64_t>(ci) * p.v_heads + h;
  float* dec = p.decay + block * kDecayFloats;
  if (tid < kChunk) {
    gam[tid] = expf(gs[tid]);
    dec[tid] = gam[tid];
    dec[kChunk + tid] = expf(__fsub_rn(gs[kChunk - 1], gs[tid]));
  }
  if (tid == 0) dec[2 * kChunk] = expf(gs[kChunk - 1]);

  // A (strictly lower) and P (lower, valid rows only); a warp shares t, so ks[t] is a broadcast.
  float* pm = p.pm + block * kChunk * kChunk;
  const int64_t q_stride = static_cast<int64_t>(p.k_heads) * p.k_dim;
  const float* qrows = p.qn + (t_first * p.k_heads + kh) * p.k_dim;
  for (int idx = tid; idx < kChunk * kChunk; idx += kThreads) {
    const int t = idx / kChunk, s = idx % kChunk;
    float a = 0.0f, pv = 0.0f;
    if (s <= t) {
      const float decay_ts = expf(__fsub_rn(gs[t], gs[s]));
      if (s < t) {
        float dot = 0.0f;
        for (int i = 0; i < p.k_dim; ++i) dot = __fmaf_rn(ks[t * kst + i], ks[s * kst + i], dot);
        a = __fmul_rn(__fmul_rn(dot, decay_ts), bs[t]);
      }
      if (t < n) {
        const float* qt = qrows + t * q_stride;
        float dot = 0.0f;
        for (int i = 0; i < p.k_dim; ++i) dot = __fmaf_rn(qt[i], ks[s * kst + i], dot);
        pv = __fmul_rn(dot, decay_ts);
      }
    }
    as[idx] = a;
    pm[idx] = pv;
  }
  __syncthreads();

  // T = (I + A)^-1 by forward substitution, a thread per column; T[s][c] = 0 for s < c.
  if (tid < kChunk) {
    const int c = tid;
    for (int t = 0; t < kChunk; ++t) {
      float acc = 0.0f;
      for (int s = 0; s < t; ++s) acc = __fmaf_rn(as[t * kChunk + s], ts[s * kChunk + c], acc);
      ts[t * kChunk + c] = __fsub_rn(t == c ? 1.0f : 0.0f, acc);
    }
  }
  __syncthreads();
  for (int idx = tid; idx < kChunk * kChunk; idx += kThreads) {
    const int s = idx % kChunk;
    const float tv = ts[idx];
    as[idx] = __fmul_rn(tv, __fmul_rn(bs[s], gam[s]));
    ts[idx] = __fmul_rn(tv, bs[s]);
  }
  __syncthreads();

  // W = (T diag(beta Gam)) K and U = (T diag(beta)) V, sums over s in order.
  float* w = p.w + block * kChunk * p.k_dim;
  for (int idx = tid; idx < kChunk * p.k_dim; idx += kThreads) {
    const int t = idx / p.k_dim, i = idx % p.k_dim;
    float acc = 0.0f;
    for (int s = 0; s <= t; ++s) acc = __fmaf_rn(as[t * kChunk + s], ks[s * kst + i], acc);
    w[idx] = acc;
  }
  const float* v = p.qkv + 2 * p.k_heads * p.k_dim + static_cast<int64_t>(h) * p.v_dim;
  float* u = p.u + block * kChunk * p.v_dim;
  for (int idx = tid; idx < kChunk * p.v_dim; idx += kThreads) {
    const int t = idx / p.v_dim, j = idx % p.v_dim;
    const int s_end = t < n - 1 ? t : n - 1;  // Padding rows of V are zero: not read.
    float acc = 0.0f;
    for (int s = 0; s <= s_end; ++s) {
      acc = __fmaf_rn(ts[t * kChunk + s], v[(t_first + s) * p.qkv_width + j], acc);
    }
    u[idx] = acc;
  }
}

// Copies one chunk's rows of normalised q or k for key head kh into dst [C][k_dim], zero-padded.
__device__ inline void StageRows(const Params& p, const float* src, int64_t t_first, int n, int kh,
                                 float* dst) {
  for (int idx = threadIdx.x; idx < kChunk * p.k_dim; idx += kThreads) {
    const int t = idx / p.k_dim, i = idx % p.k_dim;
    dst[idx] = t < n ? src[((t_first + t) * p.k_heads + kh) * p.k_dim + i] : 0.0f;
  }
}

// The state walk over the segment's chunks for one value head and 32 state columns. A thread
// owns column `lane`; warp `wid` takes rows wid, wid + 8, ... of each product, four at a time
// so four independent sums hide the fma latency (each sum keeps its index order).
__global__ void __launch_bounds__(kThreads) ScanKernel(Params p) {
  extern __shared__ float smem[];
  float* buf = smem;                        // [C][k_dim] W, then Q, then K
  float* st = buf + kChunk * p.k_dim;       // [k_dim][32] the state slice
  float* ds = st + p.k_dim * kScanColumns;  // [C][32] Delta, then exp(G_C - G_t) Delta
  float* ps = ds + kChunk * kScanColumns;   // [C][C] P
  float* dec = ps + kChunk * kChunk;        // [kDecayFloats]
  const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5;
  const int h = blockIdx.y;
  const int kh = h / (p.v_heads / p.k_heads);
  const int j = blockIdx.x * kScanColumns + lane;
  const bool active = j < p.v_dim;
  float* state = p.state + static_cast<int64_t>(h) * p.k_dim * p.v_dim + j;
  for (int i = wid; i < p.k_dim; i += kWarps) {
    st[i * kScanColumns + lane] = active ? state[static_cast<int64_t>(i) * p.v_dim] : 0.0f;
  }
  for (int ci = 0; ci < p.chunks; ++ci) {
    const int64_t t_first = static_cast<int64_t>(ci) * kChunk;
    const int n = static_cast<int>(p.rows - t_first < kChunk ? p.rows - t_first : kChunk);
    const int64_t block = static_cast<int64_t>(ci) * p.v_heads + h;
    const float* w = p.w + block * kChunk * p.k_dim;
    for (int idx = tid; idx < kChunk * p.k_dim; idx += kThreads) buf[idx] = w[idx];
    const float* pm = p.pm + block * kChunk * kChunk;
    for (int idx = tid; idx < kChunk * kChunk; idx += kThreads) ps[idx] = pm[idx];
    for (int idx = tid; idx <= 2 * kChunk; idx += kThreads)
      dec[idx] = p.decay[block * kDecayFloats + idx];
    __syncthreads();

    // Delta = U - W S0.
    const float* u = p.u + block * kChunk * p.v_dim + j;
    for (int t0 = wid; t0 < kChunk; t0 += 4 * kWarps) {
      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (int i = 0; i < p.k_dim; ++i) {
        const float sv = st[i * kScanColumns + lane];
#pragma unroll
        for (int m = 0; m < 4; ++m)
          acc[m] = __fmaf_rn(buf[(t0 + m * kWarps) * p.k_dim + i], sv, acc[m]);
      }
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const int t = t0 + m * kWarps;
        ds[t * kScanColumns + lane] = __fsub_rn(active ? u[t * p.v_dim] : 0.0f, acc[m]);
      }
    }
    __syncthreads();

    // out_t = Gam_t q_t S0 + sum_{s <= t} P[t][s] Delta_s.
    StageRows(p, p.qn, t_first, n, kh, buf);
    __syncthreads();
    for (int t0 = wid; t0 < kChunk; t0 += 4 * kWarps) {
      float inter[4] = {0.0f, 0.0f, 0.0f, 0.0f}, intra[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (int i = 0; i < p.k_dim; ++i) {
        const float sv = st[i * kScanColumns + lane];
#pragma unroll
        for (int m = 0; m < 4; ++m)
          inter[m] = __fmaf_rn(buf[(t0 + m * kWarps) * p.k_dim + i], sv, inter[m]);
      }
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const int t = t0 + m * kWarps;
        for (int s = 0; s <= t; ++s) {
          intra[m] = __fmaf_rn(ps[t * kChunk + s], ds[s * kScanColumns + lane], intra[m]);
        }
        if (active && t < n) {
          p.out[((t_first + t) * p.v_heads + h) * p.v_dim + j] =
              __fmaf_rn(dec[t], inter[m], intra[m]);
        }
      }
    }
    __syncthreads();

    // S = Gam_C S0 + K^T (exp(G_C - G_t) Delta).
    for (int t = wid; t < kChunk; t += kWarps) {
      ds[t * kScanColumns + lane] = __fmul_rn(ds[t * kScanColumns + lane], dec[kChunk + t]);
    }
    StageRows(p, p.kn, t_first, n, kh, buf);
    __syncthreads();
    const float gam_c = dec[2 * kChunk];
    for (int i0 = wid; i0 < p.k_dim; i0 += 4 * kWarps) {
      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (int t = 0; t < kChunk; ++t) {
        const float dv = ds[t * kScanColumns + lane];
#pragma unroll
        for (int m = 0; m < 4; ++m) {
          const int i = i0 + m * kWarps;
          if (i < p.k_dim) acc[m] = __fmaf_rn(buf[t * p.k_dim + i], dv, acc[m]);
        }
      }
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const int i = i0 + m * kWarps;
        if (i < p.k_dim)
          st[i * kScanColumns + lane] = __fmaf_rn(gam_c, st[i * kScanColumns + lane], acc[m]);
      }
    }
    __syncthreads();
  }
  for (int i = wid; i < p.k_dim; i += kWarps) {
    if (active) state[static_cast<int64_t>(i) * p.v_dim] = st[i * kScanColumns + lane];
  }
}

}  // namespace twinspan::cuda::gdn_chunked_kernel

#endif  // TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_CHUNKED_KERNEL_CUH_
