// Device code of the EXL3 linear (decode and verify windows, 1..64 rows per launch).
//
// Algorithm. y = (H128 . ((H128 . (x*suh)) @ W_hat)) * svh, W_hat decoded from the trellis in
// registers. The grid is (128-column blocks x 8/TPW column groups, K splits); a block owns 16*TPW
// columns (TPW 16x16 tiles per warp) of one 128-column block and one K split, and its `wk` warps
// each walk a contiguous run of k-tiles. TPW = 4 halves the input re-reads (each column group
// copies every row's k range) where rows make them dominate; it changes no sum's order. Each warp
// stages its trellis words in a private shared-memory ring (cp.async, no block barrier in the main
// loop), decodes every tile once into mma B fragments and multiplies it with all 16*MT rows, so one
// decode serves every row of a verify window.
//
// Row invariance. Every row's sum runs in one fixed order that depends on (k, n, plan) alone:
// k-tiles in order inside a warp (fp32 mma accumulators), warps in order through shared memory,
// K splits in order in the epilogue. Rows never mix, so 1 row or 64 rows give each row the same
// bits.
//
// Epilogue. Partials of every (column group, split) go to fp32 scratch `z`; the last block to
// finish a 128-column block (atomic counter) sums the splits, runs the fp32 output Hadamard across
// one warp per row, scales by svh, adds the bias and writes y. The counter is reset for the next
// launch.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_KERNEL_CUH_

#include <cuda_fp16.h>

#include <cstdint>

namespace twinspan::cuda::exl3_kernel {

// Matches the order of exl3::Codebook; the kernels are instantiated per codebook.
enum class Cb : int { k3inst = 0, kMcg = 1, kMul1 = 2 };

// Column groups per 128-column block when each warp owns TPW 16x16 tiles per k step.
template <int TPW>
__host__ __device__ constexpr int ColGroups() {
  return 8 / TPW;
}
constexpr float kHadScale = 0.08838834764831845f;  // 1/sqrt(128).

// Everything one launch needs; pointers are device pointers.
struct LinearParams {
  const uint16_t* trellis;  // First tile of the (view's) first column block, row k-tile 0.
  int64_t
      tile_row_stride;  // uint16 elements between consecutive k-tile rows (parent's n/16 * 16K).
  const __half* xh;     // [m][k] rotated input.
  const __half* svh;    // [n] output scales of the view.
  const __half* bias;   // [n] or nullptr.
  float* z;             // [sk][m][n] fp32 partials.
  int* counters;        // [n/128], zero before the launch, zero again after it.
  float* y_f32;         // [m][ldy] or nullptr.
  __half* y_f16;        // [m][ldy] or nullptr.
  int64_t ldy;
  int m, k, n, sk, wk;
};

// Pipeline depth per warp: the ring holds each k step's trellis words and its A tile.
template <int K, int MT>
__host__ __device__ constexpr int Stages() {
  // Measured on the H200: 8 stages at MT = 1, K <= 4 beat 6 by 10-20% at one row.
  return MT == 1 ? (K <= 4 ? 8 : 6) : (MT == 2 ? 4 : 3);
}

template <int K, int TPW>
__host__ __device__ constexpr int
StageWords() {  // uint32 words of one warp's k step of trellis (TPW tiles).
  return TPW * 8 * K;
}

// A tile of one k step: 16*MT rows of 16 halves, rows padded to 12 words so the fragment loads of
// a warp hit 32 distinct banks.
constexpr int kARowWords = 12;
template <int MT>
__host__ __device__ constexpr int AWords() {
  return 16 * MT * kARowWords;
}

template <int K, int MT, int TPW>
__host__ __device__ constexpr int RingWords() {  // One warp's ring.
  return Stages<K, MT>() * (StageWords<K, TPW>() + AWords<MT>());
}

// Dynamic shared memory of one block: the warps' rings, reused for the 16*MT x 16*TPW reduction
// tile.
template <int K, int MT, int TPW>
__host__ __device__ constexpr int SharedBytes(int wk) {
  const int ring = wk * RingWords<K, MT, TPW>() * 4, red = 16 * MT * 16 * TPW * 4;
  return ring > red ? ring : red;
}

// ---- decode ---------------------------------------------------------------------------------

// Two fp16 codebook values of states s0, s1 packed as (lo = s0, hi = s1).
template <Cb CB>
__device__ __forceinline__ uint32_t Codebook2(uint32_t s0, uint32_t s1) {
  if constexpr (CB == Cb::kMul1) {
    // value = fp16(1024 + bytesum(s*M)) * 1/147.7 - 10.38: one rounding, as __hfma.
    const uint32_t x0 = s0 * 0x83DCD12Du, x1 = s1 * 0x83DCD12Du;
    const uint32_t h0 = __dp4a(x0, 0x01010101u, 0x6400u);
    const uint32_t h1 = __dp4a(x1, 0x01010101u, 0x6400u);
    const uint32_t h = __byte_perm(h0, h1, 0x5410);
    const __half2 kinv = __halves2half2(__ushort_as_half(0x1EEE), __ushort_as_half(0x1EEE));
    const __half2 kbias = __halves2half2(__ushort_as_half(0xC931), __ushort_as_half(0xC931));
    const __half2 v = __hfma2(*reinterpret_cast<const __half2*>(&h), kinv, kbias);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    uint32_t x0, x1;
    if constexpr (CB == Cb::k3inst) {
      x0 = s0 * 89226354u + 64248484u;
      x1 = s1 * 89226354u + 64248484u;
    } else {
      x0 = s0 * 0xCBAC1FEDu;
      x1 = s1 * 0xCBAC1FEDu;
    }
    // Keep sign and 12 mantissa bits, force the exponent into [0.125, 2): one lop3 each.
    x0 = (x0 & 0x8FFF8FFFu) ^ 0x3B603B60u;
    x1 = (x1 & 0x8FFF8FFFu) ^ 0x3B603B60u;
    const uint32_t lo = __byte_perm(x0, x1, 0x5410), hi = __byte_perm(x0, x1, 0x7632);
    const __half2 v =
        __hadd2(*reinterpret_cast<const __half2*>(&lo), *reinterpret_cast<const __half2*>(&hi));
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// The 16-bit state starting at bit `bit` (MSB-first) of the 96-bit string w0:w1:w2.
template <int bit>
__device__ __forceinline__ uint32_t StateAt(uint32_t w0, uint32_t w1, uint32_t w2) {
  constexpr int q = bit / 32, r = bit % 32;
  const uint32_t a = q == 0 ? w0 : (q == 1 ? w1 : w2);
  if constexpr (r == 8) {
    return __byte_perm(a, 0u, 0x4421);  // Bytes 2..1, zero above: one PRMT.
  } else if constexpr (r + 16 <= 32) {
    return (a >> (16 - r)) & 0xFFFFu;
  } else {
    const uint32_t b = q == 0 ? w1 : w2;
    return __funnelshift_l(b, a, r) >> 16;
  }
}

// Per-lane constants for reading one tile: byte offsets of the 4 words holding the lane's 8
// windows, and the bit offset of the first window inside the first word. Positions 8l..8l+7
// belong to lane l.
struct LaneWindow {
  uint32_t byte[4];
  int offset;
};

template <int K>
__device__ __forceinline__ LaneWindow MakeLaneWindow(int lane) {
  LaneWindow w;
  const int bits = 256 * K;
  const int b0 = ((8 * lane + 1) * K - 16 + bits) % bits;  // Window of position 8l starts here.
  const int first = b0 / 32;
#pragma unroll
  for (int i = 0; i < 4; ++i) w.byte[i] = 4 * ((first + i) % (8 * K));
  w.offset = b0 % 32;
  return w;
}

// Decodes the lane's 8 positions of one tile (8K words at byte address `tile` in shared memory)
// into two m16n8k16 B fragments: frag[0..1] for tile columns 0..7, frag[2..3] for columns 8..15.
template <Cb CB, int K>
__device__ __forceinline__ void DecodeTile(const char* tile, const LaneWindow& lw,
                                           uint32_t frag[4]) {
  const uint32_t a = *reinterpret_cast<const uint32_t*>(tile + lw.byte[0]);
  const uint32_t b = *reinterpret_cast<const uint32_t*>(tile + lw.byte[1]);
  const uint32_t c = *reinterpret_cast<const uint32_t*>(tile + lw.byte[2]);
  const uint32_t d = *reinterpret_cast<const uint32_t*>(tile + lw.byte[3]);
  const uint32_t w0 = __funnelshift_l(b, a, lw.offset);
  const uint32_t w1 = __funnelshift_l(c, b, lw.offset);
  const uint32_t w2 = __funnelshift_l(d, c, lw.offset);
  frag[0] = Codebook2<CB>(StateAt<0 * K>(w0, w1, w2), StateAt<1 * K>(w0, w1, w2));
  frag[1] = Codebook2<CB>(StateAt<2 * K>(w0, w1, w2), StateAt<3 * K>(w0, w1, w2));
  frag[2] = Codebook2<CB>(StateAt<4 * K>(w0, w1, w2), StateAt<5 * K>(w0, w1, w2));
  frag[3] = Codebook2<CB>(StateAt<6 * K>(w0, w1, w2), StateAt<7 * K>(w0, w1, w2));
}

// ---- small PTX helpers -----------------------------------------------------------------------

__device__ __forceinline__ void Mma16816(float c[4], const uint32_t a[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void CpAsync16(uint32_t smem_addr, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr), "l"(gmem));
}
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n"); }
template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Programmatic dependent launch (sm_90+; a no-op before): wait for the grids this one depends on,
// and let the next grid in the stream start its prologue.
__device__ __forceinline__ void WaitForPriorGrids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void AllowNextGrid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" :::);
#endif
}

// ---- kernels ---------------------------------------------------------------------------------

// Output Hadamard of one 128-column row held as 4 values per lane (columns 4*lane + i), in place.
__device__ __forceinline__ void Hadamard128(float v[4]) {
  float a = v[0] + v[1], b = v[0] - v[1], c = v[2] + v[3], d = v[2] - v[3];
  v[0] = a + c;
  v[1] = b + d;
  v[2] = a - c;
  v[3] = b - d;
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int s = 1; s < 32; s <<= 1) {
    const bool upper = lane & s;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float o = __shfl_xor_sync(0xFFFFFFFFu, v[i], s);
      v[i] = upper ? o - v[i] : v[i] + o;
    }
  }
}

template <Cb CB, int K, int MT, int TPW>
__global__ void __launch_bounds__(256, MT == 1 && TPW == 2 ? 3 : 2) LinearKernel(LinearParams p) {
  constexpr int kColGroups = ColGroups<TPW>();
  constexpr int kCols = 16 * TPW;  // Columns of one block.
  constexpr int kStages = Stages<K, MT>();
  constexpr int kWords = StageWords<K, TPW>();
  constexpr int kChunks = kWords / 4;  // 16-byte trellis chunks of one k step.
  constexpr int kStageWords = kWords + AWords<MT>();
  extern __shared__ __align__(16) uint32_t smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int colblock = blockIdx.x / kColGroups, group = blockIdx.x % kColGroups;
  const int split = blockIdx.y;
  const int kt = p.k / 16;
  const int per_warp = kt / (p.sk * p.wk);
  const int tk0 = (split * p.wk + warp) * per_warp;
  const int tn0 = colblock * 8 + group * TPW;
  const int rows = p.m < 16 * MT ? p.m : 16 * MT;

  constexpr int kStageBytes = kStageWords * 4, kRingBytes = kStages * kStageBytes;
  char* ring = reinterpret_cast<char*>(smem) + warp * kRingBytes;
  const uint32_t ring_s = static_cast<uint32_t>(__cvta_generic_to_shared(ring));
  // Rows >= m of every A tile stay zero: cp.async writes rows < m only.
  for (int i = lane; i < kRingBytes / 4; i += 32) reinterpret_cast<uint32_t*>(ring)[i] = 0u;
  __syncwarp();

  // Per-lane copy plan, fixed for the loop: trellis chunks lane + 32 * i (TPW tiles are contiguous
  // in a k-tile row) and up to MT 16-byte chunks of A (row c / 2, columns 8 * (c % 2) of the
  // k-tile).
  const int64_t stride = p.tile_row_stride;
  const uint16_t* tsrc = p.trellis + static_cast<int64_t>(tk0) * stride +
                         static_cast<int64_t>(tn0) * 16 * K + lane * 8;
  const __half* xsrc = p.xh + static_cast<int64_t>(tk0) * 16;
  int a_goff[MT];
  uint32_t a_soff[MT];
  bool a_on[MT];
#pragma unroll
  for (int i = 0; i < MT; ++i) {
    const int c = lane + 32 * i;
    a_on[i] = c < 2 * rows;
    a_goff[i] = (c >> 1) * p.k + (c & 1) * 8;
    a_soff[i] = 4 * (kWords + (c >> 1) * kARowWords + (c & 1) * 4);
  }
  auto issue_trellis = [&](const uint16_t* src, uint32_t slot) {
#pragma unroll
    for (int i = 0; i < (kChunks + 31) / 32; ++i)
      if (lane + 32 * i < kChunks)
        CpAsync16(ring_s + slot + (lane + 32 * i) * 16, src + 32 * i * 8);
  };
  auto issue_a = [&](const __half* src, uint32_t slot) {
#pragma unroll
    for (int i = 0; i < MT; ++i)
      if (a_on[i]) CpAsync16(ring_s + slot + a_soff[i], src + a_goff[i]);
  };

  const LaneWindow lw = MakeLaneWindow<K>(lane);
  float acc[MT][TPW][2][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int t = 0; t < TPW; ++t)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[mt][t][h][i] = 0.f;

          // Weights stream in while the input rotation (the previous grid) finishes; A after it is
          // done. Group S-1+step always holds step's A (and from step S-1 on its trellis too), so
          // the main loop waits with S-2 groups pending.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < per_warp) issue_trellis(tsrc + s * stride, s * kStageBytes);
    CpAsyncCommit();
  }
  WaitForPriorGrids();
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < per_warp) issue_a(xsrc + s * 16, s * kStageBytes);
    CpAsyncCommit();
  }
  const uint16_t* tnext = tsrc + (kStages - 1) * stride;
  const __half* xnext = xsrc + (kStages - 1) * 16;
  uint32_t read_off = 0, write_off = (kStages - 1) * kStageBytes;
  // A fragment of this lane: row arow (+8), k columns acol (+1) and acol + 8 (+9).
  const int arow = lane >> 2, acol = (lane & 3) * 2;
  const uint32_t a_frag_off = 4 * (kWords + arow * kARowWords + (lane & 3));

  for (int step = 0; step < per_warp; ++step) {
    CpAsyncWait<kStages - 2>();
    __syncwarp();
    if (step + kStages - 1 < per_warp) {
      issue_trellis(tnext, write_off);
      issue_a(xnext, write_off);
    }
    CpAsyncCommit();
    tnext += stride;
    xnext += 16;
    write_off = write_off + kStageBytes == kRingBytes ? 0 : write_off + kStageBytes;

    const char* stage = ring + read_off;
    read_off = read_off + kStageBytes == kRingBytes ? 0 : read_off + kStageBytes;
    uint32_t a[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const uint32_t* ar =
          reinterpret_cast<const uint32_t*>(stage + a_frag_off + mt * 16 * kARowWords * 4);
      a[mt][0] = ar[0];
      a[mt][1] = ar[8 * kARowWords];
      a[mt][2] = ar[4];
      a[mt][3] = ar[8 * kARowWords + 4];
    }
#pragma unroll
    for (int t = 0; t < TPW; ++t) {
      uint32_t b[4];
      DecodeTile<CB, K>(stage + t * 32 * K, lw, b);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        if (mt * 16 < p.m) {
          Mma16816(acc[mt][t][0], a[mt], b[0], b[1]);
          Mma16816(acc[mt][t][1], a[mt], b[2], b[3]);
        }
      }
    }
  }
  CpAsyncWait<0>();
  __syncthreads();  // The rings become the reduction tile.
  float* red = reinterpret_cast<float*>(smem);

  // Warp partials summed in warp order: red = ((w0 + w1) + w2) + ...
  for (int w = 0; w < p.wk; ++w) {
    if (warp == w) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int t = 0; t < TPW; ++t)
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              const int row = mt * 16 + arow + (i >> 1) * 8;
              const int col = t * 16 + h * 8 + acol + (i & 1);
              float& r = red[row * kCols + col];
              r = w == 0 ? acc[mt][t][h][i] : r + acc[mt][t][h][i];
            }
    }
    __syncthreads();
  }

  // This block's kCols columns of split `split` to scratch.
  const int colbase = colblock * 128 + group * kCols;
  for (int i = threadIdx.x; i < p.m * kCols; i += blockDim.x) {
    const int row = i / kCols, col = i % kCols;
    if (row < 16 * MT)
      __stcg(p.z + (static_cast<int64_t>(split) * p.m + row) * p.n + colbase + col,
             red[row * kCols + col]);
  }
  __threadfence();
  __syncthreads();
  __shared__ int last;
  if (threadIdx.x == 0) {
    const int arrived = atomicAdd(p.counters + colblock, 1);
    last = arrived == kColGroups * p.sk - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();

  // Epilogue of the whole 128-column block: splits in order, output Hadamard, svh, bias.
  const int c0 = colblock * 128 + lane * 4;
  float sv[4], bi[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    sv[i] = __half2float(p.svh[c0 + i]);
    bi[i] = p.bias ? __half2float(p.bias[c0 + i]) : 0.f;
  }
  for (int row = warp; row < p.m; row += p.wk) {
    float v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = __ldcg(p.z + static_cast<int64_t>(row) * p.n + c0 + i);
    for (int s = 1; s < p.sk; ++s)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        v[i] = __fadd_rn(v[i], __ldcg(p.z + (static_cast<int64_t>(s) * p.m + row) * p.n + c0 + i));
    Hadamard128(v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {  // As the CPU op: scale, times svh, plus bias when there is one.
      v[i] = __fmul_rn(__fmul_rn(v[i], kHadScale), sv[i]);
      if (p.bias) v[i] = __fadd_rn(v[i], bi[i]);
    }
    if (p.y_f32) {
      float4* dst = reinterpret_cast<float4*>(p.y_f32 + static_cast<int64_t>(row) * p.ldy + c0);
      *dst = make_float4(v[0], v[1], v[2], v[3]);
    } else {
      __half2* dst = reinterpret_cast<__half2*>(p.y_f16 + static_cast<int64_t>(row) * p.ldy + c0);
      dst[0] = __floats2half2_rn(v[0], v[1]);
      dst[1] = __floats2half2_rn(v[2], v[3]);
    }
  }
  if (threadIdx.x == 0) p.counters[colblock] = 0;
}

}  // namespace twinspan::cuda::exl3_kernel

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_KERNEL_CUH_
