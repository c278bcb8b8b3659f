// Host side of the EXL3 linear's prompt path: the rows of a launch, the workspace (rotated rows and
// split partials past the decode kernel's counters) and the launches. Device code is in
// exl3_prompt_kernel.cuh (64-row tiles, mma.sync) and exl3_prompt_wgmma_kernel.cuh (256-row tiles,
// wgmma).
#include <algorithm>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cuda/exl3_linear_run.cuh"
#include "kernels/cuda/exl3_prompt_kernel.cuh"
#include "kernels/cuda/exl3_prompt_launch.cuh"
#include "kernels/cuda/exl3_prompt_wgmma_kernel.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::exl3_run {
namespace {

namespace ek = exl3_kernel;

constexpr size_t kAlign = 256;
constexpr int64_t kMaxLaunchRows = 4096;
// Split partials of one launch stay under this many bytes (the 27B's down_proj at 4,096 rows:
// 671 MB; its head at 256 rows: 254 MB).
constexpr size_t kScratchCap = size_t{768} << 20;

size_t AlignUp(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

int64_t Blocks(const Part& part) {
  int64_t nb = 0;
  for (int i = 0; i < part.count; ++i) nb += part.outs[i].view->n / 128;
  return nb;
}

// Rows a block owns: 64 (PromptKernel) or 256 (PromptWgmmaKernel).
int64_t TileRows(bool wgmma) { return wgmma ? ek::kWgmmaRows : ek::kPromptRows; }

int64_t RowTiles(int64_t m, bool wgmma) { return (m + TileRows(wgmma) - 1) / TileRows(wgmma); }

// Work units a tile of the part is cut into along k at m rows on `sms` SMs: 1 where the tiles
// alone fill two waves (of two 64-row blocks an SM, or one wgmma block), else a split (1 / sk of
// k) or a plan group (1 / G) each, the fewest that fill them (or the most the plan allows); a
// unit's k-tiles must be whole shared-memory stages.
// Context::exl3_schedule forces a group a unit (1; 0 where the plan's groups are not whole
// stages) or the whole of k (2).
int Units(const Part& part, int64_t m, int sms, int schedule, bool wgmma) {
  const Exl3DeviceWeight& w = *part.outs[0].view;
  const int64_t tiles = (wgmma ? Blocks(part) : (Blocks(part) + 1) / 2) * RowTiles(m, wgmma);
  const int64_t want = int64_t{wgmma ? 2 : 4} * sms;
  const int stage = wgmma ? ek::kWgmmaStageKtiles : ek::kPromptStageKtiles;
  const int G = w.k_splits * w.warps, L = static_cast<int>(w.k / 16 / G);
  if (schedule == 1) return L % stage == 0 ? G : 0;
  if (schedule == 2) return 1;
  int units = 1;
  for (const int u : {w.k_splits, G}) {
    if (tiles * units >= want) break;
    if (u > units && (G / u * L) % stage == 0) units = u;
  }
  return units;
}

size_t ScratchBytes(const Part& part, int64_t m, int sms, int schedule, bool wgmma) {
  const Exl3DeviceWeight& w = *part.outs[0].view;
  const int units = Units(part, m, sms, schedule, wgmma);
  // Units layout (a group a unit): G partials; otherwise one per split.
  const int partials = units == w.k_splits * w.warps ? units : w.k_splits;
  return sizeof(float) * 128 * static_cast<size_t>(partials) * m * Blocks(part);
}

// Rows of one launch: up to kMaxLaunchRows, fewer (in whole tiles) while a part's partials would
// pass the cap.
int64_t LaunchRows(const Part* parts, int count, int64_t rows, int sms, int schedule, bool wgmma) {
  const int64_t tile = TileRows(wgmma);
  int64_t m = std::min(rows, kMaxLaunchRows);
  for (int i = 0; i < count; ++i)
    while (m > tile && ScratchBytes(parts[i], m, sms, schedule, wgmma) > kScratchCap)
      m = (m - 1) / tile * tile;
  return m;
}

// The rotated rows of a launch, zeros up to its last tile's end.
size_t RotatedBytes(int64_t k, int64_t m, bool wgmma) {
  return static_cast<size_t>(RowTiles(m, wgmma) * TileRows(wgmma) / 8) * (k / 16) * 64 *
         sizeof(uint32_t);
}

// Bytes past `offset` for the parts at `rows` rows with this tile.
size_t WorkspaceBytes(const Part* parts, int count, int64_t rows, int sms, int schedule,
                      bool wgmma) {
  const int64_t m = LaunchRows(parts, count, std::max<int64_t>(rows, 1), sms, schedule, wgmma);
  size_t z = 0;
  for (int i = 0; i < count; ++i) z = std::max(z, ScratchBytes(parts[i], m, sms, schedule, wgmma));
  return AlignUp(RotatedBytes(parts[0].outs[0].view->k, m, wgmma)) + AlignUp(z);
}

int SmCount() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    return 132;  // Sizes only: an error shows at the launch.
  return sms;
}

// Whether the device runs wgmma blocks for these parts: an sm_90 GPU, the prompt units built for
// sm_90a (TWINSPAN_CUDA_WGMMA), 224 KB of shared memory a block with a fold.
bool WgmmaFits(const Part* parts, int count, int device) {
#ifndef TWINSPAN_CUDA_WGMMA
  (void)parts;
  (void)count;
  (void)device;
  return false;
#else
  int optin = 0, major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
          cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess ||
      major != 9 || minor != 0)
    return false;
  for (int i = 0; i < count; ++i)
    if (ek::PromptWgmmaSmemBytes(parts[i].outs[0].view->warps) > optin) return false;
  return true;
#endif
}

absl::Status LaunchStatus(const char* op, cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrFormat("%s: %s failed: %s", op, what, cudaGetErrorString(e)));
}

}  // namespace

size_t PromptWorkspaceBytes(const Part* parts, int count, int64_t rows, size_t offset,
                            int schedule) {
  const int sms = SmCount();  // Either tile may run: room for the larger.
  return offset + std::max(WorkspaceBytes(parts, count, rows, sms, schedule, false),
                           WorkspaceBytes(parts, count, rows, sms, schedule, true));
}

bool PromptFits(const Part* parts, int count, int device) {
  int optin = 0;
  if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
      cudaSuccess)
    return false;
  for (int i = 0; i < count; ++i)
    if (ek::PromptSmemBytes(parts[i].outs[0].view->warps) > optin) return false;
  return true;
}

absl::Status RunPrompt(const char* op, const Context& ctx, const float* x, int64_t x_stride,
                       int64_t rows, const Part* parts, int count, int device, size_t offset) {
  const int tile = ctx.exl3_prompt_tile;
  if (tile != 0 && tile != ek::kPromptRows && tile != ek::kWgmmaRows)
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: Context::exl3_prompt_tile=%d, need 0, %d or %d", op, tile,
                        ek::kPromptRows, ek::kWgmmaRows));
  // The device is asked only where the wgmma tiles could run.
  const bool wgmma = (tile == ek::kWgmmaRows || (tile == 0 && rows >= kExl3WidePromptRows)) &&
                     WgmmaFits(parts, count, device);
  if (tile == ek::kWgmmaRows && !wgmma)
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s: the prompt path's %d-row tiles need an sm_90 GPU, a build with sm_90a and %d bytes "
        "of shared memory a block (Context::exl3_prompt_tile)",
        op, ek::kWgmmaRows, ek::PromptWgmmaSmemBytes(parts[0].outs[0].view->warps)));
  for (int i = 0; i < count; ++i)
    if (Units(parts[i], 1, 1, ctx.exl3_schedule, wgmma) == 0)
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s: weight %d's plan groups of %d k-tiles are not whole stages of the prompt path's "
          "group units (Context::exl3_schedule 1)",
          op, i,
          parts[i].outs[0].view->k / 16 /
              (parts[i].outs[0].view->k_splits * parts[i].outs[0].view->warps)));
  const size_t need = PromptWorkspaceBytes(parts, count, rows, offset, ctx.exl3_schedule);
  if (!ctx.workspace || ctx.workspace_bytes < need)
    return absl::ResourceExhaustedError(
        absl::StrFormat("%s: workspace of %d bytes, needs %d for the prompt path at rows=%d", op,
                        ctx.workspace_bytes, need, rows));
  const int sms = SmCount();
  const int64_t launch_rows = LaunchRows(parts, count, rows, sms, ctx.exl3_schedule, wgmma);
  const int64_t k = parts[0].outs[0].view->k;
  char* ws = static_cast<char*>(ctx.workspace);
  auto* xs = reinterpret_cast<uint32_t*>(ws + offset);
  float* z = reinterpret_cast<float*>(ws + offset + AlignUp(RotatedBytes(k, launch_rows, wgmma)));
  const bool early = PdlScopeFromEnv() != PdlScope::kNone;
  for (int64_t r0 = 0; r0 < rows; r0 += launch_rows) {
    const int m = static_cast<int>(std::min(rows - r0, launch_rows));
    const int row_tiles = static_cast<int>(RowTiles(m, wgmma));
    for (int i = 0; i < count; ++i) {
      const Part& part = parts[i];
      const Exl3DeviceWeight& w0 = *part.outs[0].view;
      ek::PromptParams pp{};
      ek::LaunchPart& lp = pp.part;
      ek::LinearParams& p = lp.p;
      int64_t first = 0;
      for (int j = 0; j < part.count; ++j) {
        const Output& o = part.outs[j];
        ek::Segment& sg = lp.seg[j];
        sg.trellis = o.view->trellis;
        sg.svh = o.view->svh;
        sg.bias = o.view->bias;
        sg.first = static_cast<int>(first);
        sg.keep_begin = static_cast<int>(o.keep_begin);
        sg.keep_end = static_cast<int>(o.keep_end);
        sg.out_col = o.out_col;
        sg.vector_store = (o.out_col - o.keep_begin) % 4 == 0 && part.y_stride % 4 == 0 &&
                          reinterpret_cast<uintptr_t>(part.y) % 16 == 0;
        first += o.view->n / 128;
      }
      p.segments = part.count;
      p.x = x + r0 * x_stride;
      p.ldx = x_stride;
      p.suh = w0.suh;
      p.y = part.y + r0 * part.y_stride;
      p.ldy = part.y_stride;
      p.z = z;
      p.xs_global = xs;
      p.m = m;
      p.k = static_cast<int>(k);
      p.nb = static_cast<int>(first);
      p.sk = w0.k_splits;
      p.wk = w0.warps;
      pp.units = Units(part, m, sms, ctx.exl3_schedule, wgmma);
      // A group a unit (with several a split): the units layout; else the rounds layout.
      p.rounds = pp.units == p.sk * p.wk && p.wk > 1 ? 0 : 1;
      p.counters = reinterpret_cast<int*>(ws);  // The decode kernel's, zero between launches.
      p.blocks = (wgmma ? p.nb : (p.nb + 1) / 2) * pp.units * row_tiles;
      // The rows rotated with this weight's suh into [row group][k-tile][B fragment].
      const int chunks = static_cast<int>(k / 128);
      const dim3 rgrid((chunks + ek::kPromptRotateWarps - 1) / ek::kPromptRotateWarps,
                       row_tiles * static_cast<int>(TileRows(wgmma) / 8));
      if (wgmma)
        LaunchMaybeEarly(early, &ek::PromptRotateKernel<ek::kPromptRotateWarps, true>, rgrid,
                         dim3(32 * ek::kPromptRotateWarps), 0, ctx.stream, p, xs);
      else
        LaunchMaybeEarly(early, &ek::PromptRotateKernel<ek::kPromptRotateWarps>, rgrid,
                         dim3(32 * ek::kPromptRotateWarps), 0, ctx.stream, p, xs);
      ABSL_RETURN_IF_ERROR(LaunchStatus(op, cudaGetLastError(), "prompt rotation launch"));
      const int smem = wgmma ? ek::PromptWgmmaSmemBytes(p.wk) : ek::PromptSmemBytes(p.wk);
      cudaError_t e = cudaSuccess;
      switch (w0.codebook) {
        case Exl3Codebook::k3inst:
          e = ek::LaunchPrompt<ek::Cb::k3inst>(w0.bits, wgmma, p.blocks, smem, device, pp,
                                               ctx.stream);
          break;
        case Exl3Codebook::kMcg:
          e = ek::LaunchPrompt<ek::Cb::kMcg>(w0.bits, wgmma, p.blocks, smem, device, pp,
                                             ctx.stream);
          break;
        case Exl3Codebook::kMul1:
          e = ek::LaunchPrompt<ek::Cb::kMul1>(w0.bits, wgmma, p.blocks, smem, device, pp,
                                              ctx.stream);
          break;
      }
      ABSL_RETURN_IF_ERROR(LaunchStatus(op, e, "prompt kernel launch"));
    }
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cuda::exl3_run
