// Device code of the EXL3 prompt path's wgmma tiles (sm_90a): 256 rows a block, each weight tile
// decoded once, in registers, for all of them.
//
// Algorithm. PromptKernel (exl3_prompt_kernel.cuh) decodes every weight tile once per 64 rows and
// feeds mma.m16n8k16 from registers; at 4,096 rows the decode's instructions, not the tensor cores,
// set its pace. Here a block of two warpgroups owns 256 rows x one 128-column block over its
// unit's k range: warpgroup h takes half-strip h, and its warp q decodes tile q of each k-tile
// (DecodeTileA: the A fragment of wgmma's register operand is mma.m16n8k16's, warp q its rows
// 16q..16q+15) and the warpgroup multiplies it with all 256 rows in one wgmma.m64n256k16, B from
// shared memory. The rows (rotated once by PromptRotateKernel<., true> into the wgmma layout)
// stream in with cp.async, stages of 4 k-tiles, three buffers; a warp decodes k-tile t + 1 while
// the tensor cores run k-tile t.
//
// Sum order: exactly PromptKernel's, so the decode kernel's (row-invariant, bit for bit): the A
// values are the same fp16, each plan group is one chain from zero over its k-tiles in order, and
// wgmma's chain gives the bits of mma.m16n8k16's (tools/gpu/wgmma_bits.cu measures it); a split's
// groups fold in warp order in shared memory (the rounds fold) and the partials go to z in the
// rounds or units layout for the decode kernel's Epilogue. Rows never mix.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_PROMPT_WGMMA_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_PROMPT_WGMMA_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/exl3_prompt_kernel.cuh"

namespace twinspan::cuda::exl3_kernel {

constexpr int kWgmmaWarps = 8;  // Two warpgroups: the half-strips of a column block.
constexpr int kWgmmaStageKtiles = 4;
constexpr int kWgmmaBuffers = 3;
constexpr int kWgmmaStageWords = kWgmmaStageKtiles * kWgmmaXsWordsPerKtile;  // 32 KB.

// Dynamic shared memory of a wgmma block: three stages of rows, and each warp's fold of a split's
// groups when it has more than one (224 KB with it: one block an SM).
__host__ __device__ constexpr int PromptWgmmaSmemBytes(int wk) {
  return 4 * (kWgmmaBuffers * kWgmmaStageWords + (wk > 1 ? kWgmmaWarps * kPromptFoldWords : 0));
}

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TWINSPAN_WGMMA_DEVICE 1
#define TWINSPAN_WGMMA_F4(i) "+f"(c[i]), "+f"(c[i + 1]), "+f"(c[i + 2]), "+f"(c[i + 3])
#define TWINSPAN_WGMMA_F16(i)                                               \
  TWINSPAN_WGMMA_F4(i), TWINSPAN_WGMMA_F4(i + 4), TWINSPAN_WGMMA_F4(i + 8), \
      TWINSPAN_WGMMA_F4(i + 12)
#define TWINSPAN_WGMMA_F64(i)                                                    \
  TWINSPAN_WGMMA_F16(i), TWINSPAN_WGMMA_F16(i + 16), TWINSPAN_WGMMA_F16(i + 32), \
      TWINSPAN_WGMMA_F16(i + 48)

// c += A (this warp's 16 rows of the warpgroup's 64, in registers) x B (256 rows, `desc`).
__device__ __forceinline__ void Wgmma256(float (&c)[128], const uint32_t (&a)[4], uint64_t desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
      "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "
      "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, "
      "%70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, "
      "%87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, "
      "%103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, "
      "%117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, "
      "%131}, %132, p, 1, 1, 0;\n}\n"
      : TWINSPAN_WGMMA_F64(0), TWINSPAN_WGMMA_F64(64)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}
#undef TWINSPAN_WGMMA_F64
#undef TWINSPAN_WGMMA_F16
#undef TWINSPAN_WGMMA_F4

// The B descriptor of one k-tile in shared memory: no swizzle, leading byte offset 128 (the k
// halves), stride byte offset 256 (groups of 8 rows).
__device__ __forceinline__ uint64_t WgmmaDescriptor(uint32_t smem_addr) {
  return static_cast<uint64_t>((smem_addr >> 4) & 0x3FFF) | (uint64_t{128 >> 4} << 16) |
         (uint64_t{256 >> 4} << 32);
}

// V words of weights through L1: the warpgroup's four warps read the same half-strip.
template <int V>
__device__ __forceinline__ void LoadVectorCached(const uint32_t* src, uint32_t* dst) {
  if constexpr (V == 4) {
    asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(dst[0]), "=r"(dst[1]), "=r"(dst[2]), "=r"(dst[3])
                 : "l"(src));
  } else if constexpr (V == 2) {
    asm volatile("ld.global.nc.v2.u32 {%0,%1}, [%2];\n" : "=r"(dst[0]), "=r"(dst[1]) : "l"(src));
  } else {
    asm volatile("ld.global.nc.u32 %0, [%1];\n" : "=r"(dst[0]) : "l"(src));
  }
}

// Tile q (0..3) of the lane's half-strip words into the A fragment.
template <Cb CB, int K>
__device__ __forceinline__ void DecodeTileOf(int q, const uint32_t (&w)[K], int lane,
                                             uint32_t (&a)[4]) {
  switch (q) {
    case 0:
      DecodeTileA<CB, K, 0>(w, lane, a);
      break;
    case 1:
      DecodeTileA<CB, K, 1>(w, lane, a);
      break;
    case 2:
      DecodeTileA<CB, K, 2>(w, lane, a);
      break;
    default:
      DecodeTileA<CB, K, 3>(w, lane, a);
      break;
  }
}
#endif

// Grid: column blocks x units x row tiles of 256 (row tiles fastest, so the blocks that run at
// once read the same weights from L2). With several units a tile, the last to finish (a counter)
// runs the tile's epilogue. Built for sm_90a only: elsewhere the body is empty and the host never
// launches it (Exl3PromptWgmmaBuilt).
template <Cb CB, int K>
__global__ void __launch_bounds__(32 * kWgmmaWarps, 1)
    PromptWgmmaKernel(const __grid_constant__ PromptParams pp) {
#ifdef TWINSPAN_WGMMA_DEVICE
  constexpr int V = Exl3VectorWords(K);
  constexpr int kStrip = 32 * K;  // Words of one half-strip's k-tile.
  constexpr int D = PromptPrefetchSteps(K);
  static_assert(kWgmmaStageKtiles % D == 0, "register stages align with shared stages");
  const LinearParams& p = pp.part.p;
  const Segment* seg = pp.part.seg;
  extern __shared__ __align__(128) uint32_t smem[];
  __shared__ int last_unit;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, h = warp >> 2, q = warp & 3;
  const int kt = p.k >> 4, wk = p.wk, G = p.sk * wk, L = kt / G, units = pp.units;
  const int row_tiles = (p.m + kWgmmaRows - 1) / kWgmmaRows;
  const int bid = static_cast<int>(blockIdx.x);
  const int rt = bid % row_tiles, unit = bid / row_tiles % units, b = bid / row_tiles / units;
  // The unit's groups [g0, g0 + G / units) and k-tiles [t0, t0 + ktiles); ktiles % 4 == 0.
  const int g0 = unit * (G / units), t0 = g0 * L, ktiles = G / units * L;
  const int stages = ktiles / kWgmmaStageKtiles;
  AllowNextGrid();

  // The warpgroup's half-strip, every k-tile; each warp decodes its tile of each.
  const Segment& sg = seg[SegmentOf(p, seg, b)];
  const uint32_t* strip =
      sg.trellis + (static_cast<int64_t>((b - sg.first) * 2 + h) * kt + t0) * kStrip;
  const uint32_t* pf = strip + lane * V;
  auto load = [&](uint32_t(&dst)[K]) {
#pragma unroll
    for (int v = 0; v < K / V; ++v) LoadVectorCached<V>(pf + v * 32 * V, dst + v * V);
    pf += kStrip;
  };
  const uint32_t stage_bytes = kWgmmaStageKtiles * kStrip * 4;
  auto prefetch = [&](int st, int count) {  // Stages [st, st + count) of the strip into L2.
    if (q != 0 || st >= stages) return;
    const int n = st + count < stages ? count : stages - st;
    PrefetchL2(strip + static_cast<int64_t>(st) * kWgmmaStageKtiles * kStrip, n * stage_bytes);
  };
  prefetch(0, 3);
  uint32_t buf[D][K];
#pragma unroll
  for (int d = 0; d < D; ++d)
    if (d < ktiles) load(buf[d]);

  WaitForPriorGrids();

  // Stage s of the block's rows into buffer s % 3: 32 KB, laid out as the rotation wrote it.
  const uint32_t* xs = p.xs_global + static_cast<int64_t>(rt) * kt * kWgmmaXsWordsPerKtile;
  const uint32_t smem_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  auto issue_stage = [&](int st) {
    const uint32_t dst0 = smem_s + 4 * (st % kWgmmaBuffers) * kWgmmaStageWords;
    const uint32_t* src0 =
        xs + static_cast<int64_t>(t0 + st * kWgmmaStageKtiles) * kWgmmaXsWordsPerKtile;
    for (int c = threadIdx.x; c < kWgmmaStageWords / 4; c += 32 * kWgmmaWarps)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst0 + 16 * c),
                   "l"(src0 + 4 * c));
    asm volatile("cp.async.commit_group;\n" ::);
  };
  issue_stage(0);
  if (stages > 1) issue_stage(1);

  float acc[128];
  auto zero_acc = [&]() {  // A group's chain starts from zero, as in the decode kernel.
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.f;
  };
  zero_acc();

  // Ends group g as PromptKernel does: the rounds fold in this thread's shared sums, or the
  // partial to z (rounds: the split's at its last group; units: the group's). Accumulator 4j + e
  // is column 16q + gid + 8 (e / 2) of the half-strip, row 8j + 2 tig + e % 2 of the tile.
  const int gid = lane >> 2, tig = lane & 3;
  const uint32_t fold_s =
      smem_s + 4 * (kWgmmaBuffers * kWgmmaStageWords + warp * kPromptFoldWords + lane);
  const int ldz = p.rounds ? p.nb * 128 : 128;
  const int64_t zstride = static_cast<int64_t>(p.m) * ldz;
  const int row0 = rt * kWgmmaRows;
  float* const zlane = p.z + (p.rounds ? b * 128 : static_cast<int64_t>(b) * G * p.m * 128) +
                       h * 64 + 16 * q + gid + static_cast<int64_t>(row0 + 2 * tig) * ldz;
  const int rows_left = p.m - row0 - 2 * tig;  // Rows of this lane still real.
  auto finish_group = [&](int g) {
    const int s = g / wk, w = g - s * wk;
    if (p.rounds && w + 1 < wk) {
#pragma unroll
      for (int i = 0; i < 128; ++i) {
        const uint32_t a = fold_s + 4 * 32 * i;
        StoreSharedF32(a, w == 0 ? acc[i] : __fadd_rn(LoadSharedF32(a), acc[i]));
      }
    } else {
      float* const zs = zlane + (p.rounds ? s : g) * zstride;
      const bool fold = p.rounds && wk > 1;
#pragma unroll
      for (int i = 0; i < 128; ++i) {
        const int row = 8 * (i >> 2) + (i & 1);
        float v = acc[i];
        if (fold) v = __fadd_rn(LoadSharedF32(fold_s + 4 * 32 * i), v);
        if (row < rows_left) __stcg(zs + row * ldz + 8 * ((i >> 1) & 1), v);
      }
    }
    zero_acc();
  };

  uint32_t a[2][4];  // A fragments: the next k-tile's decoded while the wgmma reads the last.
  int next_end = L, group = g0;
  for (int st = 0; st < stages; ++st) {
    if (st + 1 < stages)
      asm volatile("cp.async.wait_group 1;\n" ::: "memory");
    else
      asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // For the tensor cores.
    __syncthreads();  // Stage st is in shared memory; stage st - 1's wgmmas are done.
    if (st + 2 < stages) issue_stage(st + 2);  // Into stage st - 1's buffer.
    prefetch(st + 3, 1);
    const uint32_t bs = smem_s + 4 * (st % kWgmmaBuffers) * kWgmmaStageWords;
#pragma unroll 1
    for (int j0 = 0; j0 < kWgmmaStageKtiles; j0 += D) {
#pragma unroll
      for (int d = 0; d < D; ++d) {
        const int t = st * kWgmmaStageKtiles + j0 + d;  // d's parity is t's: D and 4 are even.
        DecodeTileOf<CB, K>(q, buf[d], lane, a[d & 1]);
        if (t + D < ktiles) load(buf[d]);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        Wgmma256(acc, a[d & 1], WgmmaDescriptor(bs + 4 * (j0 + d) * kWgmmaXsWordsPerKtile));
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        // The wgmma before this one is done: its A fragment may take the next decode.
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        if (t + 1 == next_end) {
          asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
          finish_group(group);
          ++group;
          next_end += L;
        }
      }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  }

  // The tile's rows of its column block, once every unit's partials are in z.
  if (units > 1) {
    if (!LastUnitOfTile(p.counters + b * row_tiles + rt, units, &last_unit)) return;
  } else {
    __syncthreads();  // The other warps' partials of this tile are in z.
  }
  for (int task = warp; task < kWgmmaRows; task += kWgmmaWarps) {
    const int row = row0 + task;
    if (row < p.m) Epilogue(p, seg, b, row);
  }
#endif
}

}  // namespace twinspan::cuda::exl3_kernel

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_PROMPT_WGMMA_KERNEL_CUH_
