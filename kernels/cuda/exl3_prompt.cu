// Host side of the EXL3 linear's prompt path: the rows of a launch, the workspace (rotated rows and
// split partials past the decode kernel's counters) and the launches. Device code is in
// exl3_prompt_kernel.cuh.
#include <algorithm>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cuda/exl3_linear_run.cuh"
#include "kernels/cuda/exl3_prompt_kernel.cuh"
#include "kernels/cuda/exl3_prompt_launch.cuh"
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

int64_t RowTiles(int64_t m) { return (m + ek::kPromptRows - 1) / ek::kPromptRows; }

// Work units a tile of the part is cut into along k at m rows on `sms` SMs: 1 where the tiles
// alone fill two waves of two blocks an SM, else a split (1 / sk of k) or a plan group (1 / G)
// each, the fewest that fill them (or the most the plan allows); a unit's k-tiles must be whole
// shared-memory stages.
// Context::exl3_schedule forces a group a unit (1; 0 where the plan's groups are not whole
// stages) or the whole of k (2).
int Units(const Part& part, int64_t m, int sms, int schedule) {
  const Exl3DeviceWeight& w = *part.outs[0].view;
  const int64_t tiles = (Blocks(part) + 1) / 2 * RowTiles(m), want = int64_t{4} * sms;
  const int G = w.k_splits * w.warps, L = static_cast<int>(w.k / 16 / G);
  if (schedule == 1) return L % ek::kPromptStageKtiles == 0 ? G : 0;
  if (schedule == 2) return 1;
  int units = 1;
  for (const int u : {w.k_splits, G}) {
    if (tiles * units >= want) break;
    if (u > units && (G / u * L) % ek::kPromptStageKtiles == 0) units = u;
  }
  return units;
}

size_t ScratchBytes(const Part& part, int64_t m, int sms, int schedule) {
  const Exl3DeviceWeight& w = *part.outs[0].view;
  const int units = Units(part, m, sms, schedule);
  // Units layout (a group a unit): G partials; otherwise one per split.
  const int partials = units == w.k_splits * w.warps ? units : w.k_splits;
  return sizeof(float) * 128 * static_cast<size_t>(partials) * m * Blocks(part);
}

// Rows of one launch: up to kMaxLaunchRows, fewer (in steps of 64) while a part's partials would
// pass the cap.
int64_t LaunchRows(const Part* parts, int count, int64_t rows, int sms, int schedule) {
  int64_t m = std::min(rows, kMaxLaunchRows);
  for (int i = 0; i < count; ++i)
    while (m > ek::kPromptRows && ScratchBytes(parts[i], m, sms, schedule) > kScratchCap)
      m = (m - 1) / ek::kPromptRows * ek::kPromptRows;
  return m;
}

size_t RotatedBytes(int64_t k, int64_t m) {
  return static_cast<size_t>(RowTiles(m) * ek::kPromptRowGroups) * (k / 16) * 64 * sizeof(uint32_t);
}

int SmCount() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    return 132;  // Sizes only: an error shows at the launch.
  return sms;
}

absl::Status LaunchStatus(const char* op, cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrFormat("%s: %s failed: %s", op, what, cudaGetErrorString(e)));
}

}  // namespace

size_t PromptWorkspaceBytes(const Part* parts, int count, int64_t rows, size_t offset,
                            int schedule) {
  const int sms = SmCount();
  const int64_t m = LaunchRows(parts, count, std::max<int64_t>(rows, 1), sms, schedule);
  size_t z = 0;
  for (int i = 0; i < count; ++i) z = std::max(z, ScratchBytes(parts[i], m, sms, schedule));
  return offset + AlignUp(RotatedBytes(parts[0].outs[0].view->k, m)) + AlignUp(z);
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
  for (int i = 0; i < count; ++i)
    if (Units(parts[i], 1, 1, ctx.exl3_schedule) == 0)
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
  const int64_t launch_rows = LaunchRows(parts, count, rows, sms, ctx.exl3_schedule);
  const int64_t k = parts[0].outs[0].view->k;
  char* ws = static_cast<char*>(ctx.workspace);
  auto* xs = reinterpret_cast<uint32_t*>(ws + offset);
  float* z = reinterpret_cast<float*>(ws + offset + AlignUp(RotatedBytes(k, launch_rows)));
  const bool early = PdlScopeFromEnv() != PdlScope::kNone;
  for (int64_t r0 = 0; r0 < rows; r0 += launch_rows) {
    const int m = static_cast<int>(std::min(rows - r0, launch_rows));
    const int row_tiles = (m + ek::kPromptRows - 1) / ek::kPromptRows;
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
      pp.units = Units(part, m, sms, ctx.exl3_schedule);
      // A group a unit (with several a split): the units layout; else the rounds layout.
      p.rounds = pp.units == p.sk * p.wk && p.wk > 1 ? 0 : 1;
      p.counters = reinterpret_cast<int*>(ws);  // The decode kernel's, zero between launches.
      p.blocks = (p.nb + 1) / 2 * pp.units * row_tiles;
      // The rows rotated with this weight's suh into [row group][k-tile][B fragment].
      const int chunks = static_cast<int>(k / 128);
      const dim3 rgrid((chunks + ek::kPromptRotateWarps - 1) / ek::kPromptRotateWarps,
                       row_tiles * ek::kPromptRowGroups);
      LaunchMaybeEarly(early, &ek::PromptRotateKernel<ek::kPromptRotateWarps>, rgrid,
                       dim3(32 * ek::kPromptRotateWarps), 0, ctx.stream, p, xs);
      ABSL_RETURN_IF_ERROR(LaunchStatus(op, cudaGetLastError(), "prompt rotation launch"));
      const int smem = ek::PromptSmemBytes(p.wk);
      cudaError_t e = cudaSuccess;
      switch (w0.codebook) {
        case Exl3Codebook::k3inst:
          e = ek::LaunchPrompt<ek::Cb::k3inst>(w0.bits, p.blocks, smem, device, pp, ctx.stream);
          break;
        case Exl3Codebook::kMcg:
          e = ek::LaunchPrompt<ek::Cb::kMcg>(w0.bits, p.blocks, smem, device, pp, ctx.stream);
          break;
        case Exl3Codebook::kMul1:
          e = ek::LaunchPrompt<ek::Cb::kMul1>(w0.bits, p.blocks, smem, device, pp, ctx.stream);
          break;
      }
      ABSL_RETURN_IF_ERROR(LaunchStatus(op, e, "prompt kernel launch"));
    }
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cuda::exl3_run
