// Device code of the EXL3 linear's prompt path (many rows a launch: prompts, wide verify batches).
//
// Algorithm. The decode kernel (exl3_linear_kernel.cuh) decodes every weight tile once per launch
// of at most 64 rows, so a prompt decodes the weights once per 64 rows and spreads its sums over
// per-group partials. Here a block owns a tile of 64 rows x 256 columns (two 128-column blocks)
// over the whole of k: each of its 4 warps streams one half-strip (4 tiles of 16 columns) through
// every k-tile, decodes each tile once into the mma A fragment and multiplies it with the 8 row
// groups of the block (8 mma a tile), so a decoded weight serves 64 rows and the tensor cores,
// not the decode, set the pace. The rows' B fragments (rotated once for the launch by
// PromptRotateKernel) stream through shared memory in stages of 8 k-tiles, shared by the 4 warps.
//
// Sum order: exactly the decode kernel's (row-invariant, bit for bit): each group of L k-tiles is
// one mma chain from zero; split s = ((g(s,0) + g(s,1)) + ...) folded in warp order (the "rounds"
// fold, each thread's running sum in shared memory); the split partials go to scratch z in the
// rounds layout and the block's Epilogue (the decode kernel's own) folds them in split order, runs
// the output Hadamard, svh and bias and writes the kept columns. Rows never mix, so a row's bits
// are the ones it gets alone (tests/cuda/exl3_linear_cuda_test.cc).
//
// Measured (H200, docs/perf.md, 2026-12-04, `twinspan_gpu_bench --sections prompt`): the 27B's 400
// body linears at 4,096 rows in 977 ms (204 TFLOP/s; 64-row launches 2,267 ms), at 256 rows in 85
// ms (142). ncu: 255 registers (12-32 bytes spilled), 2 warps a scheduler with 0.68 eligible,
// tensor pipe 36% busy; 16 warps of tile pairs instead were 7-8% slower from 1,024 rows.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_PROMPT_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_PROMPT_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/exl3_linear_kernel.cuh"

namespace twinspan::cuda::exl3_kernel {

constexpr int kPromptWarps = 4;      // Half-strips (64 columns) of a block: 2 column blocks.
constexpr int kPromptRowGroups = 8;  // Row groups of 8 a block: 64 rows.
constexpr int kPromptRows = 8 * kPromptRowGroups;
constexpr int kPromptStageKtiles = 8;  // k-tiles of B fragments per shared-memory stage.
constexpr int kPromptRotateWarps = 8;  // Per block of the rotation kernel.
// B fragment words of one stage (kPromptStageKtiles k-tiles x 8 row groups x 64 words).
constexpr int kPromptStageWords = kPromptStageKtiles * kPromptRowGroups * 64;
// Shared words of one warp's running split sums (its 4 x 8 x 4 accumulators per lane).
constexpr int kPromptFoldWords = 4 * kPromptRowGroups * 4 * 32;

// Dynamic shared memory of a prompt block: two B stages, and the fold of a split's groups when
// it has more than one.
__host__ __device__ constexpr int PromptSmemBytes(int wk) {
  return 4 * (2 * kPromptStageWords + (wk > 1 ? kPromptWarps * kPromptFoldWords : 0));
}

// Register stages of a warp's weight stream: 4 k-tiles ahead up to 4 words a lane, else 2.
__host__ __device__ constexpr int PromptPrefetchSteps(int K) { return K <= 4 ? 4 : 2; }

// An L2 policy for weights that several blocks read (the row tiles of one column tile).
__device__ __forceinline__ uint64_t EvictNormalPolicy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

// With several work units a tile: whether this block is the tile's last unit to finish (it then
// runs the tile's epilogue over every unit's partials), counted on `counter`, which is left zero.
// The whole block calls it; `flag` is a shared int.
__device__ __forceinline__ bool LastUnitOfTile(int* counter, int units, int* flag) {
  __threadfence();  // Release: this unit's partials before its count.
  __syncthreads();
  if (threadIdx.x == 0) *flag = atomicAdd(counter, 1) == units - 1;
  __syncthreads();
  if (!*flag) return false;
  __threadfence();                     // Acquire side of the other units' fences.
  if (threadIdx.x == 0) *counter = 0;  // Counted out: ready for the next launch.
  return true;
}

// xs of the prompt path: [row group of the launch][k-tile][64 words], each k-tile's words the B
// fragment of one 8-row group (lane * 2 + {b0, b1}); or, kWgmma, [256-row tile][k-tile][2,048
// words] in the wgmma layout (WgmmaXsOffset). Rows past the last hold zeros.
// Grid: (k / 128 chunks over kWarps warps a block, row groups).
template <int kWarps, bool kWgmma = false>
__global__ void __launch_bounds__(32 * kWarps)
    PromptRotateKernel(const __grid_constant__ LinearParams p, uint32_t* xs) {
  WaitForPriorGrids();
  AllowNextGrid();
  const int group = static_cast<int>(blockIdx.y), kt = p.k / 16;
  LinearParams q = p;  // This group's 8 rows as rows 0..7 of a one-group launch.
  q.x = p.x + static_cast<int64_t>(group) * 8 * p.ldx;
  q.m = p.m - 8 * group;
  const int w = static_cast<int>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int warps = static_cast<int>(gridDim.x) * kWarps;
  if constexpr (kWgmma)
    RotateRange<8, true>(
        q, 1, 0, kt,
        xs + static_cast<int64_t>(group / (kWgmmaRows / 8)) * kt * kWgmmaXsWordsPerKtile, w, warps,
        group % (kWgmmaRows / 8) * 8);
  else
    RotateRange<8>(q, 1, 0, kt, xs + static_cast<int64_t>(group) * kt * 64, w, warps);
}

// One launch of the prompt path and how its tiles (64 rows x 2 column blocks) are cut along k.
struct PromptParams {
  // p.m rows, p.xs_global the rotated rows, p.counters zero before and after (units > 1).
  // p.rounds: 1, z in the rounds layout (whole k or a split a unit); 0, the units layout (a plan
  // group a unit).
  LaunchPart part;
  int units;  // Work units per tile: 1 (the whole of k), p.sk (a split each) or G (a group each).
};

// Grid: column tiles x units x row tiles (row tiles fastest, so the blocks that run at once read
// the same weights and find them in L2). With several units a tile, the last unit to finish (a
// counter) runs the tile's epilogue.
template <Cb CB, int K>
__global__ void __launch_bounds__(32 * kPromptWarps, 2)
    PromptKernel(const __grid_constant__ PromptParams pp) {
  constexpr int D = PromptPrefetchSteps(K);
  constexpr int V = Exl3VectorWords(K);
  constexpr int kStrip = 32 * K;  // Words of one half-strip.
  static_assert(kPromptStageKtiles % D == 0, "register stages align with shared stages");
  const LinearParams& p = pp.part.p;
  const Segment* seg = pp.part.seg;
  extern __shared__ __align__(16) uint32_t smem[];
  __shared__ int last_unit;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int kt = p.k >> 4, wk = p.wk, G = p.sk * wk, L = kt / G, units = pp.units;
  const int row_tiles = (p.m + kPromptRows - 1) / kPromptRows;
  const int bid = static_cast<int>(blockIdx.x);
  const int rt = bid % row_tiles, unit = bid / row_tiles % units, ct = bid / row_tiles / units;
  const int half = ct * kPromptWarps + warp;  // Global half index: 2 * column block + half.
  const int b = half >> 1;
  const bool active = b < p.nb;  // The last column tile may hold one column block.
  // The unit's groups [g0, g0 + G / units) and k-tiles [t0, t0 + ktiles); ktiles % 8 == 0.
  const int g0 = unit * (G / units), t0 = g0 * L, ktiles = G / units * L;
  AllowNextGrid();

  // This warp's weight stream: its half-strip's k-tiles, contiguous in the device layout.
  const Segment& sg = seg[SegmentOf(p, seg, active ? b : 0)];
  const uint32_t* strip =
      sg.trellis +
      (static_cast<int64_t>((active ? b - sg.first : 0) * 2 + (half & 1)) * kt + t0) * kStrip;
  const uint32_t* pf = strip + lane * V;
  const uint64_t policy = EvictNormalPolicy();  // Other row tiles read these words from L2.
  auto load = [&](uint32_t(&dst)[K]) {
#pragma unroll
    for (int v = 0; v < K / V; ++v) LoadVector<V>(pf + v * 32 * V, dst + v * V, policy);
    pf += kStrip;
  };
  const uint32_t stage_bytes = kPromptStageKtiles * kStrip * 4;
  const int64_t strip_bytes = static_cast<int64_t>(ktiles) * kStrip * 4;
  if (active)  // Two stages of weights into L2, then D k-tiles into registers.
    PrefetchL2(strip, static_cast<uint32_t>(strip_bytes < 2 * stage_bytes ? strip_bytes
                                                                          : 2 * stage_bytes));
  uint32_t buf[D][K];
#pragma unroll
  for (int d = 0; d < D; ++d)
    if (active) load(buf[d]);

  WaitForPriorGrids();

  // B stages: k-tiles [t0 + 8 st, + 8) of the block's 8 row groups, [k-tile][group][64 words].
  const uint32_t* xs = p.xs_global + static_cast<int64_t>(rt) * kPromptRowGroups * kt * 64;
  const uint32_t smem_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  auto issue_stage = [&](int st) {
    const uint32_t dst0 = smem_s + 4 * (st & 1) * kPromptStageWords;
    for (int c = threadIdx.x; c < kPromptStageWords / 4; c += 32 * kPromptWarps) {
      const int g = c / (kPromptStageWords / 4 / kPromptRowGroups);  // 128 chunks a group.
      const int rem = c - g * (kPromptStageWords / 4 / kPromptRowGroups);
      const int j = rem >> 4, q = rem & 15;
      const uint32_t* src =
          xs + (static_cast<int64_t>(g) * kt + t0 + st * kPromptStageKtiles + j) * 64 + q * 4;
      const uint32_t dst = dst0 + 4 * ((j * kPromptRowGroups + g) * 64 + q * 4);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
    }
    asm volatile("cp.async.commit_group;\n" ::);
  };

  float acc[4][kPromptRowGroups][4];
  auto zero_acc = [&]() {  // A group's mma chain starts from zero, as in the decode kernel.
#pragma unroll
    for (int t = 0; t < 4; ++t)
#pragma unroll
      for (int g = 0; g < kPromptRowGroups; ++g)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[t][g][i] = 0.f;
  };
  zero_acc();

  // Ends group g. Rounds layout: the rounds fold of its split in this thread's shared sums, the
  // split's partial to z at the split's last group. Units layout: the group's partial to z. Then
  // the next group's chain starts from zero.
  const int gid = lane >> 2, tig = lane & 3;
  const uint32_t fold_s = smem_s + 4 * (2 * kPromptStageWords + warp * kPromptFoldWords + lane);
  // Rounds: z[s][row][column]; units: z[b][g][row][128 columns]. This lane's first element of a
  // partial, and the partials' and rows' strides.
  const int ldz = p.rounds ? p.nb * 128 : 128;
  const int64_t zstride = static_cast<int64_t>(p.m) * ldz;
  float* const zlane = p.z + (p.rounds ? b * 128 : static_cast<int64_t>(b) * G * p.m * 128) +
                       (half & 1) * 64 + (rt * kPromptRows + 2 * tig) * ldz + gid;
  auto finish_group = [&](int g) {
    const int s = g / wk, w = g - s * wk;
    if (p.rounds && w + 1 < wk) {
#pragma unroll
      for (int t = 0; t < 4; ++t)
#pragma unroll
        for (int r = 0; r < kPromptRowGroups; ++r)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const uint32_t a = fold_s + 4 * 32 * ((t * kPromptRowGroups + r) * 4 + e);
            StoreSharedF32(a, w == 0 ? acc[t][r][e] : __fadd_rn(LoadSharedF32(a), acc[t][r][e]));
          }
    } else {
      float* const zs = zlane + (p.rounds ? s : g) * zstride;
      const bool fold = p.rounds && wk > 1;
      const int rows_left = p.m - rt * kPromptRows - 2 * tig;  // Rows of this lane still real.
#pragma unroll
      for (int t = 0; t < 4; ++t)
#pragma unroll
        for (int r = 0; r < kPromptRowGroups; ++r)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int row = 8 * r + (e & 1);
            float v = acc[t][r][e];
            if (fold)
              v = __fadd_rn(LoadSharedF32(fold_s + 4 * 32 * ((t * kPromptRowGroups + r) * 4 + e)),
                            v);
            if (row < rows_left) __stcg(zs + row * ldz + 16 * t + 8 * (e >> 1), v);
          }
    }
    zero_acc();
  };

  const int stages = ktiles / kPromptStageKtiles;
  issue_stage(0);
  int next_end = L, group = g0;
  for (int st = 0; st < stages; ++st) {
    if (st + 1 < stages) {
      issue_stage(st + 1);
      asm volatile("cp.async.wait_group 1;\n" ::: "memory");
    } else {
      asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    }
    __syncthreads();  // Stage st is in shared memory for every warp.
    if (active && st + 2 < stages) {
      const int64_t left =
          static_cast<int64_t>(ktiles - (st + 2) * kPromptStageKtiles) * kStrip * 4;
      PrefetchL2(strip + static_cast<int64_t>(st + 2) * kPromptStageKtiles * kStrip,
                 static_cast<uint32_t>(left < stage_bytes ? left : stage_bytes));
    }
    if (active) {
      const uint32_t xaddr = smem_s + 4 * ((st & 1) * kPromptStageWords + lane * 2);
#pragma unroll 1
      for (int j0 = 0; j0 < kPromptStageKtiles; j0 += D) {
#pragma unroll
        for (int d = 0; d < D; ++d) {
          const int j = j0 + d, t = st * kPromptStageKtiles + j;
          uint32_t bx[kPromptRowGroups][2];
#pragma unroll
          for (int g = 0; g < kPromptRowGroups; ++g)
            asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];\n"
                         : "=r"(bx[g][0]), "=r"(bx[g][1])
                         : "r"(xaddr + 4 * (j * kPromptRowGroups + g) * 64));
          StepMma<CB, K, kPromptRowGroups, 4>(buf[d], 0, lane, bx, acc);
          if (t + D < ktiles) load(buf[d]);
          if (t + 1 == next_end) {
            finish_group(group);
            ++group;
            next_end += L;
          }
        }
      }
    }
    __syncthreads();  // Every warp is done with stage st before stage st + 2 overwrites it.
  }

  // The tile's rows of its column blocks, once every unit's partials are in z.
  if (units > 1 && !LastUnitOfTile(p.counters + ct * row_tiles + rt, units, &last_unit)) return;
  for (int task = warp; task < 2 * kPromptRows; task += kPromptWarps) {
    const int cb = ct * 2 + task / kPromptRows, row = rt * kPromptRows + task % kPromptRows;
    if (cb < p.nb && row < p.m) Epilogue(p, seg, cb, row);
  }
}

}  // namespace twinspan::cuda::exl3_kernel

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_PROMPT_KERNEL_CUH_
