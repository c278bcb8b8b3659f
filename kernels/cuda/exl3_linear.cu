// Host side of the EXL3 linear: validation, the launch schedule, the workspace layout and the
// launches (one per 64 rows; a second, rotation kernel first when the rows' B fragments do not
// fit in shared memory). Device code is in exl3_linear_kernel.cuh.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cuda/exl3_linear.cuh"
#include "kernels/cuda/exl3_linear_kernel.cuh"
#include "kernels/cuda/exl3_linear_launch_impl.cuh"
#include "kernels/cuda/exl3_linear_run.cuh"

namespace twinspan::cuda {
namespace exl3_run {
namespace {

namespace ek = exl3_kernel;

constexpr int64_t kMaxRowsPerLaunch = 64;
constexpr size_t kAlign = 256;
// Units-mode partials of one launch stay under this many bytes: from 9 rows on (units only) a
// launch takes fewer rows when they would not (the 27B's 1940-block head fits 64 rows).
constexpr size_t kUnitsScratchCap = size_t{512} << 20;
// Dynamic shared memory of the blocks of one SM.
constexpr int kSmemPerSm = 200 * 1024;
// Warps an SM needs to issue at its full rate (the decode has ILP, so fewer than 16).
constexpr double kSaturatingWarps = 8;
// Bytes each warp prefetches into L2 ahead of its register loads, unless tuned: 4 half-strips at
// K = 4 and at K = 6 (the floor of 4); 8 KB ahead was ~1% slower on the H200 at 1 row and 7% for
// the 16-row head (docs/perf.md).
constexpr int kL2AheadBytes = 2048;

// Column blocks one launch may have: the counters take a fixed region at the workspace's start,
// so no launch's partials ever land on another shape's counters, which must stay zero.
constexpr int64_t kMaxBlocks = int64_t{1} << 14;

size_t AlignUp(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

int RowGroups(int m) { return m <= 8 ? 1 : (m <= 16 ? 2 : (m <= 32 ? 4 : 8)); }

// What the schedule depends on: the launch's blocks and the stored matrix's k and plan.
struct Shape {
  int64_t k = 0;
  int nb = 0;  // 128-column blocks of all outputs.
  int sk = 1, wk = 1, bits = 0;
  int64_t kt() const { return k / 16; }
  int groups() const { return sk * wk; }
  int L() const { return static_cast<int>(kt() / groups()); }
  size_t units_z(int m) const { return size_t{128} * nb * groups() * m; }
  size_t rounds_z(int m) const { return size_t{128} * nb * sk * m; }
  bool units_allowed(int m) const { return units_z(m) * sizeof(float) <= kUnitsScratchCap; }
  // Rows of one launch: 64, or fewer (at least 8, where rounds remain) while units do not fit.
  int launch_rows() const {
    int m = kMaxRowsPerLaunch;
    while (m > 8 && !units_allowed(m)) m /= 2;
    return m;
  }
};

// Tiles of a work item for ng row groups: 4 up to 8 rows; at 9..16 rows 4 for plans of 8 or more
// splits whose groups hold an even number of k-tiles (their many short items halve, and rounds
// fold a split's warps in shared memory: faster on the H200, docs/perf.md) and 2 for the others
// (twice the warps busy); 2 above.
int ItemTiles(const Shape& s, int ng) {
  return ng == 1 || (ng == 2 && s.sk >= 8 && ek::ItemTilesFitPlan(ng, 4, s.L())) ? 4 : 2;
}

struct WorkspaceLayout {
  size_t counters = 0, xs = 0, z = 0, total = 0;
};

WorkspaceLayout Layout(const Shape& s, int64_t rows) {
  const int m = static_cast<int>(std::min<int64_t>(rows, s.launch_rows()));
  WorkspaceLayout l;
  l.xs = AlignUp(static_cast<size_t>(kMaxBlocks) * sizeof(int));
  // The rotation kernel's B fragments (more than 16 rows), with one spare k-tile.
  const size_t xs_bytes =
      m > 16 ? (s.kt() + 1) * ek::XsWordsPerKtile(RowGroups(m)) * sizeof(uint32_t) : 0;
  l.z = l.xs + AlignUp(xs_bytes);
  size_t z = s.rounds_z(m);
  if (s.units_allowed(m)) z = std::max(z, s.units_z(m));
  l.total = l.z + z * sizeof(float);
  return l;
}

// One launch's mode, grid and shared memory.
struct Schedule {
  bool feasible = false;
  bool shared_xs = true;  // B fragments rotated into shared memory, else by the rotation kernel.
  int rounds = 0, tw = 4, blocks = 0, warps = 0, smem_bytes = 0;
  int red_offset = 0, list_offset = 0;
  double cost = 0;
};

// One block per SM (or two of half the warps) holding all of the SM's warps: every item of a block
// runs at once where it can, and blocks differ by at most one item. REQUIRES:
// ItemTilesFitPlan(ng, tw, s.L()).
Schedule Plan(const Shape& s, int m, bool rounds, int tw, int sms, int blocks_per_sm,
              bool rotation_kernel, int max_warps) {
  Schedule c;
  const int ng = RowGroups(m), L = s.L(), per_major = 8 / tw * s.nb;
  const int items = rounds ? per_major * s.sk : per_major * s.groups();
  const int bps = blocks_per_sm == 2 ? 2 : 1;
  const int cap = std::min(ek::MaxWarps(ng) / bps, max_warps > 0 ? max_warps : 1 << 20);
  if (rounds && (cap < s.wk || tw != 4)) return c;  // Rounds take 4-tile items only.
  const int blocks = std::min(sms * bps, items);
  const int ipb = (items + blocks - 1) / blocks;
  // Rounds: slots of WK warps (named barriers 1..15); units: one warp per item.
  const int slots = rounds ? std::min({cap / s.wk, ipb, 15}) : std::min(cap, ipb);
  const int warps = rounds ? slots * s.wk : slots;
  // B fragments of the k range a block's items cover, in shared memory, with a spare k-tile.
  int span = 1;
  for (int b = 0; b < blocks; ++b) {
    const int i0 = static_cast<int>(int64_t{items} * b / blocks);
    const int i1 = static_cast<int>(int64_t{items} * (b + 1) / blocks);
    if (i1 > i0) span = std::max(span, (i1 - 1) / per_major - i0 / per_major + 1);
  }
  const int64_t ktiles = int64_t{span} * (rounds ? s.wk * L : L) + 1;
  int xs_words = static_cast<int>(std::min<int64_t>(ktiles * ek::XsWordsPerKtile(ng), 1 << 24));
  const int red_words = rounds ? slots * m * 64 : 0;
  const int64_t rest = int64_t{4} * (red_words + ipb + 1);
  if (rest + int64_t{4} * xs_words > kSmemPerSm / bps || (rotation_kernel && ng > 2)) {
    if (ng <= 2 || rest > kSmemPerSm / bps) return c;
    c.shared_xs = false;  // More than 16 rows: the rotation kernel writes them to global memory.
    xs_words = 0;
  }
  const int64_t smem = rest + int64_t{4} * xs_words;
  c.feasible = true;
  c.rounds = rounds;
  c.tw = tw;
  c.blocks = blocks;
  c.warps = warps;
  c.smem_bytes = static_cast<int>(smem);
  c.red_offset = xs_words;
  c.list_offset = xs_words + red_words;
  // Cost: the busiest SM's time over the ideal, in units of one warp's item: an SM runs its
  // warp-items at up to kSaturatingWarps at once, a warp its own items one after another; times
  // the partials' extra traffic.
  std::vector<double> time(sms, 0);
  for (int b = 0; b < blocks; ++b) {
    const int n = static_cast<int>(int64_t{items} * (b + 1) / blocks - int64_t{items} * b / blocks);
    const double load = static_cast<double>(n) * (rounds ? s.wk : 1) / kSaturatingWarps;
    time[b % sms] = std::max(time[b % sms] + load, static_cast<double>((n + slots - 1) / slots));
  }
  const double ideal = static_cast<double>(items) * (rounds ? s.wk : 1) / kSaturatingWarps / sms;
  const double busiest = *std::max_element(time.begin(), time.end());
  const double weight_bytes = static_cast<double>(s.k) * 128 * s.nb * s.bits / 8;
  const double z_bytes = 8.0 * (rounds ? s.rounds_z(m) : s.units_z(m));
  c.cost = (1 + 0.5 * z_bytes / weight_bytes) * busiest / std::max(ideal, 1.0) *
           (c.shared_xs ? 1.0 : 1.3);  // Fragments from L2 stall the mma more than from shared.
  return c;
}

absl::Status ValidateView(const char* op, const Exl3DeviceWeight& w) {
  if (!w.trellis || !w.suh || !w.svh)
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": trellis, suh and svh must be device pointers"));
  if (w.k <= 0 || w.k % 128 != 0 || w.n <= 0 || w.n % 128 != 0)
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: k=%d and n=%d must be positive multiples of 128", op, w.k, w.n));
  if (w.bits < 1 || w.bits > 8)
    return absl::InvalidArgumentError(absl::StrFormat("%s: bits=%d not in 1..8", op, w.bits));
  const int64_t kt = w.k / 16;
  if (w.k_splits < 1 || w.warps < 1 || w.warps > 8 || kt % (int64_t{w.k_splits} * w.warps) != 0)
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: plan (k_splits=%d, warps=%d) must divide the %d k-tiles, warps 1..8",
                        op, w.k_splits, w.warps, kt));
  if (reinterpret_cast<uintptr_t>(w.trellis) % 16 != 0)
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": the trellis must be a 16-byte aligned device pointer"));
  switch (w.codebook) {
    case Exl3Codebook::k3inst:
    case Exl3Codebook::kMcg:
    case Exl3Codebook::kMul1:
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(op, ": unknown codebook"));
}

// The launch shape of views of one matrix; InvalidArgument naming the first mismatch.
absl::StatusOr<Shape> ShapeOf(const char* op, const Output* outs, int count) {
  if (count < 1 || count > ek::kMaxSegments)
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %d outputs, need 1..%d", op, count, ek::kMaxSegments));
  const Exl3DeviceWeight& w0 = *outs[0].view;
  Shape s;
  s.k = w0.k;
  s.sk = w0.k_splits;
  s.wk = w0.warps;
  s.bits = w0.bits;
  int64_t blocks = 0;
  for (int i = 0; i < count; ++i) {
    const Exl3DeviceWeight& w = *outs[i].view;
    ABSL_RETURN_IF_ERROR(ValidateView(op, w));
    if (w.k != w0.k || w.bits != w0.bits || w.codebook != w0.codebook ||
        w.k_splits != w0.k_splits || w.warps != w0.warps || w.suh != w0.suh)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: view %d is not of the same matrix as view 0 (k, bits, codebook, plan, suh)", op, i));
    if (outs[i].keep_begin < 0 || outs[i].keep_begin >= outs[i].keep_end || outs[i].keep_end > w.n)
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: view %d keeps columns [%d, %d) of its %d", op, i, outs[i].keep_begin,
                          outs[i].keep_end, w.n));
    blocks += w.n / 128;
  }
  if (blocks > kMaxBlocks)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %d column blocks of 128 in one launch; at most %d", op, blocks, kMaxBlocks));
  s.nb = static_cast<int>(blocks);
  return s;
}

absl::Status CudaStatus(const char* op, cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrFormat("%s: %s failed: %s", op, what, cudaGetErrorString(e)));
}

}  // namespace

size_t WorkspaceBytes(const Output* outs, int count, int64_t rows) {
  auto shape = ShapeOf("Exl3 workspace", outs, count);
  if (!shape.ok()) return 0;
  return Layout(*shape, std::max<int64_t>(rows, 1)).total;
}

absl::Status Run(const char* op, const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                 const Output* outs, int count, float* y, int64_t y_stride) {
  ABSL_ASSIGN_OR_RETURN(const Shape s, ShapeOf(op, outs, count));
  if (rows < 0) return absl::InvalidArgumentError(absl::StrCat(op, ": rows < 0"));
  if (rows == 0) return absl::OkStatus();
  if (!x || !y)
    return absl::InvalidArgumentError(absl::StrCat(op, ": x and y must be device pointers"));
  int64_t out_cols = 0;
  for (int i = 0; i < count; ++i)
    out_cols = std::max(out_cols, outs[i].out_col + outs[i].keep_end - outs[i].keep_begin);
  if (x_stride < s.k || y_stride < out_cols || x_stride % 4 != 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: x_stride=%d must be a multiple of 4 and at least k=%d; y_stride=%d at least %d", op,
        x_stride, s.k, y_stride, out_cols));
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0)  // float4 loads of x.
    return absl::InvalidArgumentError(absl::StrCat(op, ": x must be 16-byte aligned"));
  const WorkspaceLayout layout = Layout(s, rows);
  if (!ctx.workspace || ctx.workspace_bytes < layout.total)
    return absl::ResourceExhaustedError(
        absl::StrFormat("%s: workspace of %d bytes, needs %d for k=%d, %d column blocks, rows=%d",
                        op, ctx.workspace_bytes, layout.total, s.k, s.nb, rows));
  int device = 0, sms = 0;
  ABSL_RETURN_IF_ERROR(CudaStatus(op, cudaGetDevice(&device), "cudaGetDevice"));
  ABSL_RETURN_IF_ERROR(CudaStatus(
      op, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count"));
  char* ws = static_cast<char*>(ctx.workspace);

  ek::LinearParams p{};
  int64_t first = 0;
  for (int i = 0; i < count; ++i) {
    const Exl3DeviceWeight& w = *outs[i].view;
    ek::Segment& sg = p.seg[i];
    sg.trellis = w.trellis;
    sg.svh = w.svh;
    sg.bias = w.bias;
    sg.first = static_cast<int>(first);
    sg.keep_begin = static_cast<int>(outs[i].keep_begin);
    sg.keep_end = static_cast<int>(outs[i].keep_end);
    sg.out_col = outs[i].out_col;
    sg.vector_store = (outs[i].out_col - outs[i].keep_begin) % 4 == 0 && y_stride % 4 == 0 &&
                      reinterpret_cast<uintptr_t>(y) % 16 == 0;
    first += w.n / 128;
  }
  p.segments = count;
  p.suh = outs[0].view->suh;
  p.ldx = x_stride;
  p.ldy = y_stride;
  p.z = reinterpret_cast<float*>(ws + layout.z);
  p.counters = reinterpret_cast<int*>(ws + layout.counters);
  p.k = static_cast<int>(s.k);
  p.nb = s.nb;
  p.sk = s.sk;
  p.wk = s.wk;

  const int64_t launch_rows = s.launch_rows();
  for (int64_t r0 = 0; r0 < rows; r0 += launch_rows) {
    const int m = static_cast<int>(std::min(rows - r0, launch_rows));
    Schedule best;
    const int ng = RowGroups(m);
    const int tw = ek::ItemTilesFitPlan(ng, ctx.exl3_item_tiles, s.L()) ? ctx.exl3_item_tiles
                                                                        : ItemTiles(s, ng);
    for (int rounds = 0; rounds < 2; ++rounds) {
      if (!rounds && !s.units_allowed(m)) continue;
      if (ctx.exl3_schedule != 0 && ctx.exl3_schedule != 1 + rounds) continue;
      const Schedule c = Plan(s, m, rounds, tw, sms, ctx.exl3_blocks_per_sm,
                              ctx.exl3_rotation_kernel == 1, ctx.exl3_warps);
      if (c.feasible && (!best.feasible || c.cost < best.cost)) best = c;
    }
    if (!best.feasible)
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s: the %d k-tiles of a plan group (k=%d, plan (%d, %d)) do not fit in shared memory "
          "at %d rows",
          op, s.L(), s.k, s.sk, s.wk, m));
    p.x = x + r0 * x_stride;
    p.y = y + r0 * y_stride;
    p.m = m;
    p.rounds = best.rounds;
    p.l2_ahead = ctx.exl3_l2_ahead == 0 ? std::max(4, kL2AheadBytes / (128 * s.bits))
                                        : std::max(ctx.exl3_l2_ahead, 0);
    p.red_offset = best.red_offset;
    p.list_offset = best.list_offset;
    ek::LaunchShape shape;
    shape.ng = ng;
    shape.tw = best.tw;
    shape.blocks = best.blocks;
    shape.warps = best.warps;
    shape.smem_bytes = best.smem_bytes;
    p.xs_global = nullptr;
    if (!best.shared_xs) {
      uint32_t* xs = reinterpret_cast<uint32_t*>(ws + layout.xs);
      const int warps = 8 * shape.ng * static_cast<int>(s.k / 128);
      const int blocks = (warps + ek::kRotateWarps - 1) / ek::kRotateWarps;
      const int threads = 32 * ek::kRotateWarps;
      cudaError_t e =
          shape.ng == 4
              ? ek::LaunchDependent(&ek::RotateKernel<4>, blocks, threads, 0, ctx.stream, p, xs)
              : ek::LaunchDependent(&ek::RotateKernel<8>, blocks, threads, 0, ctx.stream, p, xs);
      ABSL_RETURN_IF_ERROR(CudaStatus(op, e, "input rotation launch"));
      p.xs_global = xs;
    }
    cudaError_t e = cudaSuccess;
    switch (outs[0].view->codebook) {
      case Exl3Codebook::k3inst:
        e = ek::LaunchLinear<ek::Cb::k3inst>(s.bits, shape, p, ctx.stream);
        break;
      case Exl3Codebook::kMcg:
        e = ek::LaunchLinear<ek::Cb::kMcg>(s.bits, shape, p, ctx.stream);
        break;
      case Exl3Codebook::kMul1:
        e = ek::LaunchLinear<ek::Cb::kMul1>(s.bits, shape, p, ctx.stream);
        break;
    }
    ABSL_RETURN_IF_ERROR(CudaStatus(op, e, "linear kernel launch"));
  }
  return absl::OkStatus();
}

}  // namespace exl3_run

size_t Exl3LinearWorkspaceBytes(const Exl3DeviceWeight& w, int64_t rows) {
  const exl3_run::Output out{&w, 0, w.n, 0};
  return exl3_run::WorkspaceBytes(&out, 1, rows);
}

absl::Status Exl3Linear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                        const Exl3DeviceWeight& w, float* y, int64_t y_stride) {
  if (reinterpret_cast<uintptr_t>(y) % 16 != 0 || y_stride % 4 != 0)  // float4 stores of y.
    return absl::InvalidArgumentError(absl::StrFormat(
        "Exl3Linear: y must be 16-byte aligned with y_stride=%d a multiple of 4", y_stride));
  const exl3_run::Output out{&w, 0, w.n, 0};
  return exl3_run::Run("Exl3Linear", ctx, x, x_stride, rows, &out, 1, y, y_stride);
}

}  // namespace twinspan::cuda
