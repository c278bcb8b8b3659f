// Device code of the EXL3 linear (decode and verify windows, 1..64 rows per launch).
//
// Algorithm. y = (H128 . ((H128 . (x*suh)) @ W_hat)) * svh + bias, W_hat decoded from the trellis
// in registers. The plan (SK splits x WK warps, exl3::plan) cuts k into G = SK*WK groups of L =
// k/16/G k-tiles. A work item is (128-column block b, half h of its 8 tile columns, group g): one
// warp streams its L half-strips (4 tiles each) straight from global memory into registers with
// 16-byte loads, D steps ahead (exl3_layout.h puts a lane's bits of 4 tiles in one run), decodes
// each tile once into the A fragment of W^T and multiplies it with 8 input rows per mma
// (exl3_decode.cuh), accumulating the group in fp32 mma accumulators.
//
// Sum order (fixed by (k, plan) alone, so every row count and every column view of the stored
// matrix gives each row the same bits): inside a group, the mma chain over its k-tiles in
// order; then split s = ((g(s,0) + g(s,1)) + ...) over its WK groups; then ((split 0 + split 1)
// + ...). Rows never mix: each input row is one column of the mma's B operand.
//
// Two ways to run the same sums, chosen per launch by the host (exl3_linear.cu): "units", where
// each warp owns whole items and writes each group's partial to fp32 scratch z (fine-grained, so
// every SM gets the same work even for 96 column blocks), and "rounds", where the WK warps of a
// split work on the same (b, h) at once and fold their groups in shared memory in warp order
// before writing the split's partial (less scratch traffic for wide matrices). The last item to
// finish a column block (an atomic counter) queues it; at the block's end its warps fold the
// partials in the order above, run the fp32 output Hadamard, scale by svh, add the bias and
// write the kept columns of each segment (a span view's logits go straight into a packed row).
// From 9 rows on ("owners", a cooperative launch) block t % blocks folds row t % m of column block
// t / m instead, once that block's counter is complete, so the folds are spread over all blocks.
//
// Input. Rows are rotated (xh = fp16(H128(x*suh)/sqrt(128)), bit-identical to the CPU op) by each
// block for the k range its items cover, into shared memory in the mma B-fragment order; when
// that does not fit (more than 16 rows of a wide k range), a separate kernel writes the same
// layout to global memory first.
//
// Memory. Each warp keeps D half-strips in registers and prefetches p.l2_ahead more into L2 with
// bulk prefetches, so the HBM queue stays full at ~20 warps per SM (one block per SM holds them
// all, so every SM gets the same work to within one item).
//
// Parts. One launch may run up to kMaxParts matrices of one input (gate and up; q, k and v), each
// on its own range of blocks with its own plan, workspace and output: per-block scalars, so the
// epilogue reads its loop bounds into locals first (indexed parameters kept nvcc from unrolling).
//
// Launches up to 8 rows use programmatic dependent launch (sm_90+): a block, once resident,
// prefetches and loads its first weights before waiting for the previous grid, and touches x, y
// and the scratch only after that grid has finished (from 9 rows the launch is cooperative).
//
// Measured (H200, docs/perf.md, 2026-12-02): the 27B's 401 linears in 8.8 ms at one row and 12.8
// ms at 16 as 257 launches (exllamav3 12.4 and 18.6 ms); ~56-60% of the SM's issue slots busy at
// both (latency-bound at 5 warps a scheduler), so the decode's instruction count, not HBM, is the
// limit.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_KERNEL_CUH_

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/exl3_decode.cuh"
#include "kernels/cuda/exl3_layout.h"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::exl3_kernel {

constexpr int kRotateWarps = 8;  // Per block of the rotation kernel.
constexpr int kMaxSegments = 4;

// Tiles (16 columns each) of one work item, TW: a whole half-strip of 4 up to 16 rows, or 2 from 9
// rows on, so a warp's accumulators stay at 2 tiles x 8 rows x ... (each tile's column sums are
// independent, so how many tiles a warp takes never changes a bit). The host picks per launch.
__host__ __device__ constexpr bool ItemTilesFit(int ng, int tw) {
  return tw == 4 ? ng <= 2 : (tw == 2 && ng >= 2);
}

// Whether items of tw tiles suit a plan of L k-tiles a group at ng row groups: 4-tile items at
// 9..16 rows check item boundaries every 2 steps (their register stages), so L must be even.
__host__ __device__ constexpr bool ItemTilesFitPlan(int ng, int tw, int L) {
  return ItemTilesFit(ng, tw) && (ng != 2 || tw != 4 || L % 2 == 0);
}

// Most warps of one block (one block per SM): its registers bound it (<= 96, 96, 128, 168 regs).
__host__ __device__ constexpr int MaxWarps(int ng) {
  return ng == 1 ? 20 : (ng == 2 ? 20 : (ng == 4 ? 16 : 12));
}
constexpr float kHadScale = 0.08838834764831845f;  // 1/sqrt(128).

// Words a lane loads per k-step.
template <int K, int TW>
__host__ __device__ constexpr int StepWords() {
  return TW == 4 ? K : exl3_bits::PairLoadWords(K);
}

// k-steps each warp keeps in flight in registers (~2 KB per warp at K <= 4 for 4-tile items up to
// 8 rows; 4 steps spill at 16 rows, and 64 rows need the registers for accumulators). Even, so
// the two B-fragment buffers alternate across loop iterations.
template <int K, int NG, int TW>
__host__ __device__ constexpr int PrefetchSteps() {
  return TW == 4 ? (K <= 4 && NG == 1 ? 4 : 2) : (StepWords<K, TW>() <= 4 ? 4 : 2);
}

// B-fragment words of one k-tile for 8 * ng rows: [lane][ng][2].
__host__ __device__ constexpr int XsWordsPerKtile(int ng) { return 64 * ng; }

// Column blocks [first, next segment's first) of a launch: blocks of one view of the stored matrix,
// whose view columns [keep_begin, keep_end) go to output columns out_col, out_col + 1, ...
struct Segment {
  const uint32_t* trellis;  // The view's first block, device layout.
  const __half* svh;        // The view's columns.
  const __half* bias;       // Or nullptr.
  int first;                // First launch block of this segment.
  int keep_begin, keep_end;
  int64_t out_col;
  int vector_store;  // 1: every kept group of 4 columns is one aligned float4 store.
};

// The scalars of one matrix of a launch, run by grid blocks [first_block, first_block + blocks).
struct LinearParams {
  int segments;
  const float* x;  // [m][ldx] fp32.
  int64_t ldx;
  const __half* suh;  // [k]
  float* y;           // Output rows, stride ldy.
  int64_t ldy;
  float* z;                   // fp32 partials (units: [nb][G][m][128]; rounds: [SK][m][nb*128]).
  int* counters;              // [nb], zero before and after the launch.
  int* finished;              // [nb] epilogue rows done (owners), zero before and after.
  const uint32_t* xs_global;  // B fragments of all k-tiles, or nullptr: rotate in each block.
  int m, k, nb;               // Rows, in_features, blocks of the matrix.
  int sk, wk;
  int rounds;       // 0: units, 1: rounds.
  int slots;        // Warps (units) or WK-warp slots (rounds) of a block that take items.
  int l2_ahead;     // Half-strips each warp prefetches into L2 ahead of its register loads.
  int red_offset;   // Shared word offset of the rounds fold buffers.
  int list_offset;  // Shared word offset of the epilogue queue.
  int first_block, blocks;
};

// One matrix: its scalars and its views.
struct LaunchPart {
  LinearParams p;
  Segment seg[kMaxSegments];
};

// Matrices of one input (x, m and k the same in each part) side by side in one grid, so the ramp
// and tail of a launch come once for all of them; each keeps its own plan, so its bits.
constexpr int kMaxParts = 3;
struct LaunchParams {
  LaunchPart part[kMaxParts];
  int parts;
};

// ---- small PTX helpers -----------------------------------------------------------------------

// An L2 policy that evicts the streamed weights first, so they do not push out x or the partials.
__device__ __forceinline__ uint64_t EvictFirstPolicy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

// V words of weights, read once: not kept in L1, evicted first from L2.
template <int V>
__device__ __forceinline__ void LoadVector(const uint32_t* src, uint32_t* dst, uint64_t policy) {
  if constexpr (V == 4) {
    asm volatile(
        "ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4], %5;\n"
        : "=r"(dst[0]), "=r"(dst[1]), "=r"(dst[2]), "=r"(dst[3])
        : "l"(src), "l"(policy));
  } else if constexpr (V == 2) {
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.v2.u32 {%0,%1}, [%2], %3;\n"
                 : "=r"(dst[0]), "=r"(dst[1])
                 : "l"(src), "l"(policy));
  } else {
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.u32 %0, [%1], %2;\n"
                 : "=r"(dst[0])
                 : "l"(src), "l"(policy));
  }
}

__device__ __forceinline__ float LoadSharedF32(uint32_t addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ void StoreSharedF32(uint32_t addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(addr), "f"(v));
}

// A load that orders the loads after it (the release side is the writers' fence + atomicAdd).
__device__ __forceinline__ int LoadAcquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void NamedBarrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

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

// xh of one (row, 128-chunk) for this warp: lane l gets columns 128c + 4l .. + 3 of x (xv) times
// suh (su) as two fp16 pairs, computed as the CPU op does (fp32 x * suh, butterfly, *
// 1/sqrt(128), round to fp16). Whole warps only (shuffles).
__device__ __forceinline__ void RotateChunk(const float4& xv, const float (&su)[4],
                                            uint32_t out[2]) {
  const float xs[4] = {xv.x, xv.y, xv.z, xv.w};
  float v[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) v[i] = __fmul_rn(xs[i], su[i]);
  Hadamard128(v);
  const __half2 lo = __floats2half2_rn(__fmul_rn(v[0], kHadScale), __fmul_rn(v[1], kHadScale));
  const __half2 hi = __floats2half2_rn(__fmul_rn(v[2], kHadScale), __fmul_rn(v[3], kHadScale));
  out[0] = *reinterpret_cast<const uint32_t*>(&lo);
  out[1] = *reinterpret_cast<const uint32_t*>(&hi);
}

// Where xh element pair (row, k = col, col + 1) of k-tile tk goes in the B-fragment layout, in
// words from k-tile tk's start: lane (row % 8) * 4 + (col % 8) / 2, group row / 8, b0 or b1.
__device__ __forceinline__ int XsOffset(int row, int col, int ng) {
  const int e = col & 15;
  return ((row & 7) * 4 + ((e & 7) >> 1)) * 2 * ng + (row >> 3) * 2 + (e >> 3);
}

// Where xh element pair (row, k = col, col + 1) of a k-tile goes in the wgmma B layout of 256 rows
// (exl3_prompt_wgmma_kernel.cuh), in words from the k-tile's start: K-major 8 x 16-byte core
// matrices, the two k halves 128 bytes apart, groups of 8 rows 256 bytes apart.
__device__ __forceinline__ int WgmmaXsOffset(int row, int col) {
  return (row >> 3) * 64 + ((col & 15) >> 3) * 32 + (row & 7) * 4 + ((col & 7) >> 1);
}
constexpr int kWgmmaRows = 256;  // Rows of a wgmma tile: N of one wgmma.m64n256k16.
constexpr int kWgmmaXsWordsPerKtile = kWgmmaRows * 16 / 2;

// Writes the B fragments of k-tiles [tk_lo, tk_hi) for rows 0..8*ng-1 (zeros from row m) to xs
// (kWgmma: in the wgmma layout, as rows row0.. of its 256). Called by whole warps; warp `w` of
// `warps` takes every warps-th task, a (B rows, 128-chunk) pair, and loads its rows before it
// rotates any. When all B rows are real the B rotations have no branch between them, so their
// shuffle chains overlap (one row after another, a 16-row block's rotation took 7-15 us of its
// launch on the H200).
template <int B, bool kWgmma = false>
__device__ __forceinline__ void RotateRange(const LinearParams& p, int ng, int tk_lo, int tk_hi,
                                            uint32_t* xs, int w, int warps, int row0 = 0) {
  const int lane = threadIdx.x & 31;
  const int c0 = tk_lo / 8, c1 = (tk_hi + 7) / 8, chunks = c1 - c0;
  for (int task = w; task < ng * (8 / B) * chunks; task += warps) {
    const int r0 = task / chunks * B, col = (c0 + task % chunks) * 128 + lane * 4;
    const int tk = col >> 4;
    const bool keep = tk >= tk_lo && tk < tk_hi;  // Per lane: the chunk may start before tk_lo.
    uint32_t* t = xs + static_cast<int64_t>(tk - tk_lo) *
                           (kWgmma ? kWgmmaXsWordsPerKtile : XsWordsPerKtile(ng));
    float su[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) su[i] = __half2float(p.suh[col + i]);
    float4 xv[B];
#pragma unroll
    for (int i = 0; i < B; ++i)
      if (r0 + i < p.m) xv[i] = *reinterpret_cast<const float4*>(p.x + (r0 + i) * p.ldx + col);
    uint32_t h[B][2];
    if (r0 + B <= p.m) {
#pragma unroll
      for (int i = 0; i < B; ++i) RotateChunk(xv[i], su, h[i]);
    } else {
#pragma unroll
      for (int i = 0; i < B; ++i) {
        h[i][0] = h[i][1] = 0u;
        if (r0 + i < p.m) RotateChunk(xv[i], su, h[i]);  // Uniform: every lane shuffles.
      }
    }
    if (keep) {
#pragma unroll
      for (int i = 0; i < B; ++i) {
        if constexpr (kWgmma) {
          t[WgmmaXsOffset(row0 + r0 + i, col)] = h[i][0];
          t[WgmmaXsOffset(row0 + r0 + i, col + 2)] = h[i][1];
        } else {
          t[XsOffset(r0 + i, col, ng)] = h[i][0];
          t[XsOffset(r0 + i, col + 2, ng)] = h[i][1];
        }
      }
    }
  }
}

// The separate rotation for launches whose B fragments do not fit in shared memory.
template <int NG>
__global__ void __launch_bounds__(32 * kRotateWarps)
    RotateKernel(const __grid_constant__ LinearParams p, uint32_t* xs) {
  WaitForPriorGrids();
  AllowNextGrid();
  RotateRange<8>(p, NG, 0, p.k / 16, xs, blockIdx.x * kRotateWarps + (threadIdx.x >> 5),
                 gridDim.x * kRotateWarps);
}

// Asks L2 for `bytes` from `src` (sm_90+; nothing before), once per warp (a uniform instruction).
__device__ __forceinline__ void PrefetchL2(const void* src, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src), "r"(bytes));
#endif
}

// Asks L2 for the 128-byte line holding `src` (generic address of global memory).
__device__ __forceinline__ void PrefetchLineL2(const void* src) {
  asm volatile("prefetch.L2 [%0];\n" ::"l"(src));
}

// ---- the linear ------------------------------------------------------------------------------

template <Cb CB, int K, int NG, int T, int TW>
__device__ __forceinline__ void TileMma(const uint32_t (&w)[K], int lane,
                                        const uint32_t (&bx)[NG][2], float (&acc)[TW][NG][4]) {
  uint32_t a[4];
  DecodeTileA<CB, K, T>(w, lane, a);
#pragma unroll
  for (int g = 0; g < NG; ++g) Mma16816(acc[T][g], a, bx[g][0], bx[g][1]);
}

__device__ __forceinline__ int SegmentOf(const LinearParams& p, const Segment* seg, int b) {
  int s = 0;
  while (s + 1 < p.segments && b >= seg[s + 1].first) ++s;
  return s;
}

// Folds column block b's partials for one row in the plan's order, then the output Hadamard, svh
// and bias, and writes the kept columns. Called by a whole warp.
__device__ __forceinline__ void Epilogue(const LinearParams& p, const Segment* seg, int b,
                                         int row) {
  // Locals, so the loops below see invariant bounds (and unroll) when p is indexed by part.
  const int lane = threadIdx.x & 31, c = 4 * lane, sk = p.sk, wk = p.wk, m = p.m, G = sk * wk;
  const float* z = p.z;
  // The column scales first: their loads overlap the partials'.
  const Segment& sg = seg[SegmentOf(p, seg, b)];
  const int vc = (b - sg.first) * 128 + c;  // View column of v[0].
  float sv[4], bv[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    sv[i] = __half2float(sg.svh[vc + i]);
    if (sg.bias) bv[i] = __half2float(sg.bias[vc + i]);
  }
  float v[4];
  if (p.rounds) {
    const int64_t ldz = static_cast<int64_t>(p.nb) * 128;
    const float* zr = z + row * ldz + b * 128 + c;
    for (int s = 0; s < sk; ++s) {
      const float4 t = __ldcg(reinterpret_cast<const float4*>(zr + s * m * ldz));
      const float u[4] = {t.x, t.y, t.z, t.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) v[i] = s == 0 ? u[i] : __fadd_rn(v[i], u[i]);
    }
  } else {
    const int64_t gstride = static_cast<int64_t>(m) * 128;
    const float* zr = z + (static_cast<int64_t>(b) * G * m + row) * 128 + c;
    for (int s = 0; s < sk; ++s) {
      float sp[4];
      for (int w = 0; w < wk; ++w) {
        const float4 t = __ldcg(reinterpret_cast<const float4*>(zr + (s * wk + w) * gstride));
        const float u[4] = {t.x, t.y, t.z, t.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) sp[i] = w == 0 ? u[i] : __fadd_rn(sp[i], u[i]);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) v[i] = s == 0 ? sp[i] : __fadd_rn(v[i], sp[i]);
    }
  }
  Hadamard128(v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {  // As the CPU op: scale, times svh, plus bias when there is one.
    v[i] = __fmul_rn(__fmul_rn(v[i], kHadScale), sv[i]);
    if (sg.bias) v[i] = __fadd_rn(v[i], bv[i]);
  }
  float* out = p.y + row * p.ldy + sg.out_col - sg.keep_begin;
  if (sg.vector_store && vc >= sg.keep_begin && vc + 4 <= sg.keep_end) {
    *reinterpret_cast<float4*>(out + vc) = make_float4(v[0], v[1], v[2], v[3]);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (vc + i >= sg.keep_begin && vc + i < sg.keep_end) out[vc + i] = v[i];
  }
}

// Decodes the tiles of one k-step (all 4 of the lane's half-strip words, or the pair of a 2-tile
// item, as tiles 0 and 1 of its PairView) and multiplies each with the step's B fragments.
template <Cb CB, int K, int NG, int TW>
__device__ __forceinline__ void StepMma(const uint32_t (&w)[StepWords<K, TW>()], int pair, int lane,
                                        const uint32_t (&bx)[NG][2], float (&acc)[TW][NG][4]) {
  if constexpr (TW == 4) {
    TileMma<CB, K, NG, 0>(w, lane, bx, acc);
    TileMma<CB, K, NG, 1>(w, lane, bx, acc);
    TileMma<CB, K, NG, 2>(w, lane, bx, acc);
    TileMma<CB, K, NG, 3>(w, lane, bx, acc);
  } else {
    uint32_t v[K];
    exl3_bits::PairView<K>(w, pair, v);
    TileMma<CB, K, NG, 0>(v, lane, bx, acc);
    TileMma<CB, K, NG, 1>(v, lane, bx, acc);
  }
}

template <Cb CB, int K, int NG, int TW>
__global__ void __launch_bounds__(32 * MaxWarps(NG), 1)
    LinearKernel(const __grid_constant__ LaunchParams lp) {
  static_assert(ItemTilesFit(NG, TW), "4-tile items up to 16 rows, 2-tile items from 9");
  constexpr int kParts = 8 / TW;          // Items per column block and group.
  constexpr int SW = StepWords<K, TW>();  // Words a lane loads per k-step.
  constexpr int D = PrefetchSteps<K, NG, TW>();
  // A second copy of the step loop without the item checks, where its registers fit beside the
  // first (4-tile items at 16 rows and 64 rows spill with it).
  constexpr bool kUnchecked = NG == 1 || (NG <= 4 && TW == 2);
  // 4-tile items at 9..16 rows, where that copy spills: one loop whose checks come once per D
  // steps, since the host sends them only plans with L % D == 0 (items and loads then start on
  // D-step boundaries).
  constexpr bool kBlockChecks = NG == 2 && TW == 4;
  // From 9 rows on every block folds its share of the rows (a cooperative launch; see below).
  constexpr bool kOwners = NG >= 2;
  static_assert(!kBlockChecks || D == 2, "ItemTilesFitPlan assumes 2 steps a check");
  constexpr int V = Exl3VectorWords(K);
  constexpr int kStrip = 32 * K;  // Words of one half-strip.
  constexpr int kXs = XsWordsPerKtile(NG);
  static_assert(kMaxParts == 3, "the pick of this block's part below sees 3");
  const int bid = static_cast<int>(blockIdx.x);
  const int part = (lp.parts > 1 && bid >= lp.part[1].p.first_block) +
                   (lp.parts > 2 && bid >= lp.part[2].p.first_block);
  const LinearParams& p = lp.part[part].p;
  const Segment* seg = lp.part[part].seg;
  const int block = bid - p.first_block;
  // B fragments in shared memory (always up to 16 rows; more rows when the host found room), else
  // a separate kernel rotated x into global memory (p.xs_global).
  const bool shared_xs = NG <= 2 || !p.xs_global;
  extern __shared__ __align__(16) uint32_t smem[];
  __shared__ int queued;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int kt = p.k >> 4, wk = p.wk, G = p.sk * wk, L = kt / G;
  const int per_major = kParts * p.nb;  // Items per group (units) or per split (rounds).

  // This block's items [i0, i1); this warp's are i0 + lead + j * slots. Rounds (4-tile items
  // only): the WK warps of a slot share each item, warp wi taking group s * WK + wi.
  const int items = p.rounds ? per_major * p.sk : per_major * G;
  const int i0 = static_cast<int>(static_cast<int64_t>(items) * block / p.blocks);
  const int i1 = static_cast<int>(static_cast<int64_t>(items) * (block + 1) / p.blocks);
  const int slots = p.slots;  // The block may hold more warps, for another part.
  const int lead = p.rounds ? warp / wk : warp;
  const int wi = p.rounds ? warp % wk : 0;
  const int n_items = lead < slots && i1 - i0 > lead ? (i1 - i0 - lead + slots - 1) / slots : 0;
  const int total = n_items * L;  // Steps of this warp.

  // Item j of this warp: column block b, part q (the half for 4-tile items, the tile pair
  // 2 * half + pair for 2-tile items) and group g.
  auto item_at = [&](int j, int& b, int& q, int& g) {
    const int it = i0 + lead + j * slots;
    const int major = it / per_major, rem = it - major * per_major;
    b = rem / kParts;
    q = rem - b * kParts;
    g = p.rounds ? major * wk + wi : major;
  };
  // The item's half-strips (all lanes) and the lane's first word in the first one.
  auto item_strip = [&](int j, int& pair) {
    int b, q, g;
    item_at(j, b, q, g);
    const Segment& sg = seg[SegmentOf(p, seg, b)];
    const int h = TW == 4 ? q : q >> 1;
    pair = TW == 4 ? 0 : q & 1;
    return sg.trellis + (static_cast<int64_t>((b - sg.first) * 2 + h) * kt + g * L) * kStrip;
  };
  auto lane_start = [&](const uint32_t* strip, int pair) {
    if constexpr (TW == 2 && K % 2 == 0)  // The pair's first natural word, p * K / 2.
      return strip + (pair ? Exl3LaneWordOffset(K, lane, K / 2) : Exl3LaneWordOffset(K, lane, 0));
    else
      return strip + lane * V;
  };

  if (threadIdx.x == 0) queued = 0;
  AllowNextGrid();

  // Weights first: they depend on nothing the previous grid writes.
  uint32_t buf[D][SW];
  const uint64_t policy = EvictFirstPolicy();
  int pf_j = 0, pf_left = L, pf_pair = 0;
  const uint32_t* strip0 = n_items > 0 ? item_strip(0, pf_pair) : seg[0].trellis;
  const uint32_t* pf = lane_start(strip0, pf_pair);
  // Offsets of a K = 6 pair's 2nd and 3rd words from its 1st (natural words 3p .. 3p + 2).
  int k6_o1 = pf_pair ? 63 : 1;
  auto load_words = [&](uint32_t(&dst)[SW]) {
    if constexpr (TW == 4 || K % 2 == 1) {
#pragma unroll
      for (int v = 0; v < K / V; ++v) LoadVector<V>(pf + v * 32 * V, dst + v * V, policy);
    } else if constexpr (K % 4 == 0 || K == 2) {
      LoadVector<SW>(pf, dst, policy);  // Contiguous: 2 or 4 words of one vector, or 1 word.
    } else {
      static_assert(K == 6, "even K is 2, 4, 6 or 8");
      LoadVector<1>(pf, dst, policy);
      LoadVector<1>(pf + k6_o1, dst + 1, policy);
      LoadVector<1>(pf + 64, dst + 2, policy);
    }
    pf += kStrip;
  };
  auto load = [&](uint32_t(&dst)[SW]) {
    load_words(dst);
    if (--pf_left == 0) {
      pf_left = L;
      if (++pf_j < n_items) {
        pf = lane_start(item_strip(pf_j, pf_pair), pf_pair);
        k6_o1 = pf_pair ? 63 : 1;
      }
    }
  };
  // L2 prefetch cursor, p.l2_ahead half-strips ahead of the register loads: it keeps HBM busy
  // beyond what D register stages can, and streams the first weights while the previous grid
  // finishes. Both pairs of a 2-tile half prefetch it (the second finds it in L2).
  int l2_j = 0, l2_left = L, l2_pair = 0;
  const uint32_t* l2 = strip0;
  auto prefetch_l2 = [&](int steps) {
    while (steps > 0 && l2_j < n_items) {
      const int n = steps < l2_left ? steps : l2_left;
      PrefetchL2(l2, static_cast<uint32_t>(n * kStrip * sizeof(uint32_t)));  // Same for all lanes.
      l2 += n * kStrip;
      l2_left -= n;
      steps -= n;
      if (l2_left == 0) {
        l2_left = L;
        if (++l2_j < n_items) l2 = item_strip(l2_j, l2_pair);
      }
    }
  };
  if (p.l2_ahead > 0) prefetch_l2(p.l2_ahead + D);
#pragma unroll
  for (int d = 0; d < D; ++d)
    if (d < total) load(buf[d]);

  // The k-tiles this block's items cover.
  const int span = p.rounds ? wk * L : L;
  const int m0 = i0 / per_major, m1 = i1 > i0 ? (i1 - 1) / per_major : m0;
  const int tk_lo = shared_xs ? m0 * span : 0, tk_hi = (m1 + 1) * span;
  // What the block reads of the weight's scales after the wait goes to L2 now: suh of its k range
  // (the rotation) and svh and bias of its items' column blocks (the epilogue).
  if (shared_xs) {
    const int c0 = tk_lo / 8, c1 = (tk_hi + 7) / 8;  // 128-column chunks, 2 lines each.
    for (int t = threadIdx.x; t < 2 * (c1 - c0); t += blockDim.x)
      PrefetchLineL2(p.suh + c0 * 128 + t * 64);
  }
  for (int j = lane; j < n_items; j += 32) {
    int b, q, g;
    item_at(j, b, q, g);
    const Segment& sg = seg[SegmentOf(p, seg, b)];
    const int off = (b - sg.first) * 128;  // 256 bytes: at most 3 lines.
    for (int e = 0; e < 128; e += 63) {
      PrefetchLineL2(sg.svh + off + e);
      if (sg.bias) PrefetchLineL2(sg.bias + off + e);
    }
  }

  WaitForPriorGrids();

  // The B fragments of the k-tiles this block's items cover.
  const uint32_t* xs = p.xs_global;
  if (shared_xs) {
    RotateRange<NG == 1 ? 2 : 4>(p, NG, tk_lo, tk_hi, smem, warp, warps);  // Beside the weights.
    xs = smem;
  }
  __syncthreads();
  // Shared byte addresses of this slot's fold buffer and of the epilogue queue (plain integers, so
  // the loop does not rebuild generic pointers).
  const uint32_t smem_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t red_s = smem_s + 4 * (p.red_offset + lead * p.m * 64);
  int* queue = reinterpret_cast<int*>(smem + p.list_offset);

  float acc[TW][NG][4];
#pragma unroll
  for (int t = 0; t < TW; ++t)
#pragma unroll
    for (int g = 0; g < NG; ++g)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[t][g][i] = 0.f;

  // Compute cursor: current item (cb, cq, cg) and steps left in it. The next step's B fragments
  // are loaded one step ahead into the other of two buffers; xs has one spare k-tile at its end,
  // so the load past an item's last k-tile stays in bounds (and is redone for the next item).
  int c_j = 0, c_left = L, cb = 0, cq = 0, cg = 0;
  uint32_t bx[2][NG][2];
  uint32_t xaddr = 0;          // Shared byte address of this step's fragments (shared_xs).
  const uint32_t* xg = xs;     // Global pointer of this step's fragments (otherwise).
  auto seek_xs = [&](int g) {  // First fragments of group g's k-tiles, for this lane.
    const int words = ((g * L - tk_lo) * 32 + lane) * 2 * NG;
    if (shared_xs)
      xaddr = smem_s + 4 * words;
    else
      xg = xs + words;
  };
  auto load_bx = [&](uint32_t(&dst)[NG][2], int ahead) {
    if (shared_xs) {
      const uint32_t a = xaddr + 4 * ahead * kXs;
      if constexpr (NG == 1) {
        asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];\n"
                     : "=r"(dst[0][0]), "=r"(dst[0][1])
                     : "r"(a));
      } else {
#pragma unroll
        for (int g = 0; g < NG; g += 2)
          asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                       : "=r"(dst[g][0]), "=r"(dst[g][1]), "=r"(dst[g + 1][0]), "=r"(dst[g + 1][1])
                       : "r"(a + 8 * g));
      }
    } else if constexpr (NG > 2) {
#pragma unroll
      for (int g = 0; g < NG; g += 2) {
        const uint4 t = __ldcg(reinterpret_cast<const uint4*>(xg + ahead * kXs + 2 * g));
        dst[g][0] = t.x;
        dst[g][1] = t.y;
        dst[g + 1][0] = t.z;
        dst[g + 1][1] = t.w;
      }
    }
  };
  auto advance_xs = [&]() {
    if (shared_xs)
      xaddr += 4 * kXs;
    else
      xg += kXs;
  };
  if (n_items > 0) {
    item_at(0, cb, cq, cg);
    seek_xs(cg);
    load_bx(bx[0], 0);
  }

  // Ends item (cb, cq, cg): its partial to z (units) or folded into the slot's split partial
  // (rounds); the item that completes a column block queues it for the epilogue.
  auto finish_item = [&]() {
    const int gid = lane >> 2, tig = lane & 3;
    bool last = false;
    if (!p.rounds) {
      float* zb = p.z + static_cast<int64_t>(cb * G + cg) * p.m * 128 + 16 * TW * cq;
#pragma unroll
      for (int t = 0; t < TW; ++t)
#pragma unroll
        for (int g = 0; g < NG; ++g)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int row = 8 * g + 2 * tig + (e & 1);
            if (row < p.m) __stcg(zb + row * 128 + 16 * t + gid + 8 * (e >> 1), acc[t][g][e]);
          }
      __threadfence();
      __syncwarp();
      if (lane == 0) last = atomicAdd(p.counters + cb, 1) == kParts * G - 1;
    } else if constexpr (TW == 4) {
      // Warp order: red = g(s,0); red = red + g(s,1); ...
      for (int w = 0; w < wk; ++w) {
        if (wi == w) {
#pragma unroll
          for (int t = 0; t < 4; ++t)
#pragma unroll
            for (int g = 0; g < NG; ++g)
#pragma unroll
              for (int e = 0; e < 4; ++e) {
                const int row = 8 * g + 2 * tig + (e & 1);
                if (row < p.m) {
                  const uint32_t r = red_s + 4 * (row * 64 + 16 * t + gid + 8 * (e >> 1));
                  float v = acc[t][g][e];
                  if (w > 0) v = __fadd_rn(LoadSharedF32(r), v);
                  StoreSharedF32(r, v);
                }
              }
        }
        NamedBarrier(1 + lead, 32 * wk);
      }
      const int64_t ldz = static_cast<int64_t>(p.nb) * 128;
      float* zs = p.z + static_cast<int64_t>(cg / wk) * p.m * ldz + cb * 128 + 64 * cq;
      for (int i = wi * 32 + lane; i < p.m * 64; i += 32 * wk)
        __stcg(zs + (i >> 6) * ldz + (i & 63), LoadSharedF32(red_s + 4 * i));
      __threadfence();
      NamedBarrier(1 + lead, 32 * wk);
      if (wi == 0 && lane == 0) last = atomicAdd(p.counters + cb, 1) == 2 * p.sk - 1;
    }
    if (last && !kOwners) {
      __threadfence();     // Acquire side of the other items' fences.
      p.counters[cb] = 0;  // Every item of cb has counted: ready for the next launch.
      queue[atomicAdd(&queued, 1)] = cb;
    }
#pragma unroll
    for (int t = 0; t < TW; ++t)
#pragma unroll
      for (int g = 0; g < NG; ++g)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[t][g][i] = 0.f;
  };

  int c_pair = TW == 4 ? 0 : cq & 1;
  for (int s0 = 0; s0 < total; s0 += D) {
    if (p.l2_ahead > 0) prefetch_l2(D);
    if constexpr (kBlockChecks) {
      const bool more = s0 + D < total;  // The next D steps' words, all of one item.
#pragma unroll
      for (int d = 0; d < D; ++d) {
        load_bx(bx[(d + 1) & 1], 1);
        StepMma<CB, K, NG, TW>(buf[d], c_pair, lane, bx[d & 1], acc);
        if (more) load_words(buf[d]);
        advance_xs();
      }
      if (more && (pf_left -= D) == 0) {
        pf_left = L;
        if (++pf_j < n_items) pf = lane_start(item_strip(pf_j, pf_pair), pf_pair);
      }
      if ((c_left -= D) == 0) {
        finish_item();
        c_left = L;
        if (++c_j < n_items) {
          item_at(c_j, cb, cq, cg);
          seek_xs(cg);
          load_bx(bx[0], 0);  // D is even: step 0 of the next block reads bx[0].
        }
      }
      continue;
    }
    if (kUnchecked && c_left > D && pf_left > D && s0 + 2 * D <= total) {
      // No item ends and no load crosses into another in these D steps: the same steps, unchecked.
#pragma unroll
      for (int d = 0; d < D; ++d) {
        load_bx(bx[(d + 1) & 1], 1);
        StepMma<CB, K, NG, TW>(buf[d], c_pair, lane, bx[d & 1], acc);
        load_words(buf[d]);
        advance_xs();
      }
      c_left -= D;
      pf_left -= D;
      continue;
    }
#pragma unroll
    for (int d = 0; d < D; ++d) {
      if (s0 + d < total) {
        uint32_t(&bcur)[NG][2] = bx[d & 1];
        load_bx(bx[(d + 1) & 1], 1);
        StepMma<CB, K, NG, TW>(buf[d], c_pair, lane, bcur, acc);
        if (s0 + d + D < total) load(buf[d]);
        advance_xs();
        if (--c_left == 0) {
          finish_item();
          c_left = L;
          if (++c_j < n_items) {
            item_at(c_j, cb, cq, cg);
            c_pair = TW == 4 ? 0 : cq & 1;
            seek_xs(cg);
            load_bx(bx[(d + 1) & 1], 0);
          }
        }
      }
    }
  }

  if constexpr (kOwners) {
    // Every block folds its share of the m * nb rows, once each row's column block is complete:
    // the block that completes one no longer folds all its m rows alone (at 64 rows a block could
    // hold ~20 rounds of them). The host launches such grids cooperatively, so every block the
    // wait depends on is resident.
    const int done = p.rounds ? 2 * p.sk : kParts * G, tasks = p.nb * p.m;
    for (int t = block + warp * p.blocks; t < tasks; t += warps * p.blocks) {
      const int b = t / p.m;
      while (LoadAcquire(p.counters + b) < done) __nanosleep(64);
      Epilogue(p, seg, b, t - b * p.m);
      __syncwarp();
      if (lane == 0 && atomicAdd(p.finished + b, 1) == p.m - 1) {
        p.counters[b] = 0;  // Every row of b has seen it complete: ready for the next launch.
        p.finished[b] = 0;
      }
    }
    return;
  }
  __syncthreads();  // Every queued block's partials are complete and visible (fence + counter).
  const int n_queued = queued;
  for (int i = warp; i < n_queued * p.m; i += warps) Epilogue(p, seg, queue[i / p.m], i % p.m);
}

}  // namespace twinspan::cuda::exl3_kernel

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_KERNEL_CUH_
