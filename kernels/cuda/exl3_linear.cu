// Host side of the EXL3 linear: validation, the launch schedule, the workspace layout and the
// launches (one per 64 rows for all the matrices of one input that fit side by side; a second,
// rotation kernel first when the rows' B fragments do not fit in shared memory). Device code is in
// exl3_linear_kernel.cuh.
#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cuda/exl3_linear.cuh"
#include "kernels/cuda/exl3_linear_kernel.cuh"
#include "kernels/cuda/exl3_linear_launch_impl.cuh"
#include "kernels/cuda/exl3_linear_run.cuh"

namespace twinspan::cuda {

static_assert(kMaxExl3Linears == exl3_kernel::kMaxParts, "one launch holds every weight");
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

// Rows of one launch of all the parts: the fewest any of them takes.
int LaunchRows(const Shape* shapes, int count) {
  int m = kMaxRowsPerLaunch;
  for (int i = 0; i < count; ++i) m = std::min(m, shapes[i].launch_rows());
  return m;
}

// Each part has its own counters (after the earlier parts' column blocks) and partials, so the
// parts of a launch never share them.
struct WorkspaceLayout {
  size_t counters = 0, xs = 0, total = 0;
  size_t z[ek::kMaxParts] = {};
  int first_counter[ek::kMaxParts] = {};
};

WorkspaceLayout Layout(const Shape* shapes, int count, int64_t rows) {
  const int m = static_cast<int>(std::min<int64_t>(rows, LaunchRows(shapes, count)));
  WorkspaceLayout l;
  // The column counters, then the owners' finished rows (LinearParams::finished), kMaxBlocks each.
  l.xs = AlignUp(static_cast<size_t>(2 * kMaxBlocks) * sizeof(int));
  // The rotation kernel's B fragments (more than 16 rows), with one spare k-tile.
  const size_t xs_bytes =
      m > 16 ? (shapes[0].kt() + 1) * ek::XsWordsPerKtile(RowGroups(m)) * sizeof(uint32_t) : 0;
  size_t at = l.xs + AlignUp(xs_bytes);
  int counter = 0;
  for (int i = 0; i < count; ++i) {
    const Shape& s = shapes[i];
    size_t z = s.rounds_z(m);
    if (s.units_allowed(m)) z = std::max(z, s.units_z(m));
    l.z[i] = at;
    at += AlignUp(z * sizeof(float));
    l.first_counter[i] = counter;
    counter += s.nb;
  }
  l.total = at;
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
  // Block b runs on SM b % sms after the SM's blocks before it (no allocation: this is on the
  // host path of every linear).
  double busiest = 0;
  for (int sm = 0; sm < std::min(sms, blocks); ++sm) {
    double time = 0;
    for (int b = sm; b < blocks; b += sms) {
      const int n =
          static_cast<int>(int64_t{items} * (b + 1) / blocks - int64_t{items} * b / blocks);
      const double load = static_cast<double>(n) * (rounds ? s.wk : 1) / kSaturatingWarps;
      time = std::max(time + load, static_cast<double>((n + slots - 1) / slots));
    }
    busiest = std::max(busiest, time);
  }
  const double ideal = static_cast<double>(items) * (rounds ? s.wk : 1) / kSaturatingWarps / sms;
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

// The parts' shapes; InvalidArgument naming the first part that cannot share the launch kernel
// (one K, codebook and k for all) or the count of column blocks over the counters.
absl::Status ShapesOf(const char* op, const Part* parts, int count, Shape* shapes) {
  if (count < 1 || count > ek::kMaxParts)
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %d weights, need 1..%d", op, count, ek::kMaxParts));
  int64_t blocks = 0;
  for (int i = 0; i < count; ++i) {
    ABSL_ASSIGN_OR_RETURN(shapes[i], ShapeOf(op, parts[i].outs, parts[i].count));
    const Exl3DeviceWeight& w = *parts[i].outs[0].view;
    const Exl3DeviceWeight& w0 = *parts[0].outs[0].view;
    if (w.k != w0.k || w.bits != w0.bits || w.codebook != w0.codebook)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: weight %d has k=%d, bits=%d, codebook %d; weight 0 k=%d, bits=%d, codebook %d", op,
          i, w.k, w.bits, static_cast<int>(w.codebook), w0.k, w0.bits,
          static_cast<int>(w0.codebook)));
    blocks += shapes[i].nb;
  }
  if (blocks > kMaxBlocks)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %d column blocks of 128 in one launch; at most %d", op, blocks, kMaxBlocks));
  return absl::OkStatus();
}

// The cheapest feasible schedule of shape s at m rows and tw-tile items on `sms` SMs.
Schedule Best(const Shape& s, int m, int tw, int sms, const Context& ctx) {
  Schedule best;
  for (int rounds = 0; rounds < 2; ++rounds) {
    if (!rounds && !s.units_allowed(m)) continue;
    if (ctx.exl3_schedule != 0 && ctx.exl3_schedule != 1 + rounds) continue;
    const Schedule c = Plan(s, m, rounds, tw, sms, ctx.exl3_blocks_per_sm,
                            ctx.exl3_rotation_kernel == 1, ctx.exl3_warps);
    if (c.feasible && (!best.feasible || c.cost < best.cost)) best = c;
  }
  return best;
}

// Item tiles of shape s at ng row groups: the tuning's where the plan allows it, else ItemTiles.
int TilesOf(const Shape& s, int ng, const Context& ctx) {
  return ek::ItemTilesFitPlan(ng, ctx.exl3_item_tiles, s.L()) ? ctx.exl3_item_tiles
                                                              : ItemTiles(s, ng);
}

// SMs per part in proportion to its weight bytes (one k and K: its column blocks), at least one.
void ShareSms(const Shape* shapes, int count, int sms, int* share) {
  int64_t total = 0;
  for (int i = 0; i < count; ++i) total += shapes[i].nb;
  int used = 0, largest = 0;
  for (int i = 0; i < count; ++i) {
    share[i] = std::max<int>(1, static_cast<int>(std::llround(1.0 * sms * shapes[i].nb / total)));
    used += share[i];
    if (shapes[i].nb > shapes[largest].nb) largest = i;
  }
  share[largest] = std::max(1, share[largest] + sms - used);
}

// The part's matrix, workspace and schedule in the launch's parameters.
void FillPart(const Part& part, const Shape& s, const WorkspaceLayout& layout, int index,
              const Schedule& c, char* ws, ek::LaunchPart& lpart) {
  ek::LinearParams& p = lpart.p;
  int64_t first = 0;
  for (int i = 0; i < part.count; ++i) {
    const Exl3DeviceWeight& w = *part.outs[i].view;
    ek::Segment& sg = lpart.seg[i];
    sg.trellis = w.trellis;
    sg.svh = w.svh;
    sg.bias = w.bias;
    sg.first = static_cast<int>(first);
    sg.keep_begin = static_cast<int>(part.outs[i].keep_begin);
    sg.keep_end = static_cast<int>(part.outs[i].keep_end);
    sg.out_col = part.outs[i].out_col;
    sg.vector_store = (part.outs[i].out_col - part.outs[i].keep_begin) % 4 == 0 &&
                      part.y_stride % 4 == 0 && reinterpret_cast<uintptr_t>(part.y) % 16 == 0;
    first += w.n / 128;
  }
  p.segments = part.count;
  p.suh = part.outs[0].view->suh;
  p.ldy = part.y_stride;
  p.z = reinterpret_cast<float*>(ws + layout.z[index]);
  p.counters = reinterpret_cast<int*>(ws + layout.counters) + layout.first_counter[index];
  p.finished = p.counters + kMaxBlocks;
  p.k = static_cast<int>(s.k);
  p.nb = s.nb;
  p.sk = s.sk;
  p.wk = s.wk;
  p.rounds = c.rounds;
  p.slots = c.rounds ? c.warps / s.wk : c.warps;
  p.red_offset = c.red_offset;
  p.list_offset = c.list_offset;
  p.blocks = c.blocks;
}

}  // namespace

size_t WorkspaceBytes(const Part* parts, int count, int64_t rows) {
  Shape shapes[ek::kMaxParts];
  if (!ShapesOf("Exl3 workspace", parts, count, shapes).ok()) return 0;
  const WorkspaceLayout layout = Layout(shapes, count, std::max<int64_t>(rows, 1));
  // The prompt path's (from kExl3PromptRows; a Context that forces it on fewer rows sizes its own).
  return rows < kExl3PromptRows
             ? layout.total
             : std::max(layout.total, PromptWorkspaceBytes(parts, count, rows, layout.xs));
}

absl::Status Run(const char* op, const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                 const Part* parts, int count) {
  Shape shapes[ek::kMaxParts];
  ABSL_RETURN_IF_ERROR(ShapesOf(op, parts, count, shapes));
  if (rows < 0) return absl::InvalidArgumentError(absl::StrCat(op, ": rows < 0"));
  if (rows == 0) return absl::OkStatus();
  if (!x) return absl::InvalidArgumentError(absl::StrCat(op, ": x must be a device pointer"));
  const int64_t k = shapes[0].k;
  for (int i = 0; i < count; ++i) {
    int64_t out_cols = 0;
    for (int j = 0; j < parts[i].count; ++j) {
      const Output& o = parts[i].outs[j];
      out_cols = std::max(out_cols, o.out_col + o.keep_end - o.keep_begin);
    }
    if (!parts[i].y)
      return absl::InvalidArgumentError(absl::StrCat(op, ": y must be a device pointer"));
    if (x_stride < k || parts[i].y_stride < out_cols || x_stride % 4 != 0)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: x_stride=%d must be a multiple of 4 and at least k=%d; y_stride=%d at least %d", op,
          x_stride, k, parts[i].y_stride, out_cols));
  }
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0)  // float4 loads of x.
    return absl::InvalidArgumentError(absl::StrCat(op, ": x must be 16-byte aligned"));
  const WorkspaceLayout layout = Layout(shapes, count, rows);
  if (!ctx.workspace || ctx.workspace_bytes < layout.total)
    return absl::ResourceExhaustedError(
        absl::StrFormat("%s: workspace of %d bytes, needs %d for k=%d, %d weights, rows=%d", op,
                        ctx.workspace_bytes, layout.total, k, count, rows));
  int device = 0, sms = 0;
  ABSL_RETURN_IF_ERROR(CudaStatus(op, cudaGetDevice(&device), "cudaGetDevice"));
  ABSL_RETURN_IF_ERROR(CudaStatus(
      op, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count"));
  const int64_t prompt_rows = ctx.exl3_prompt_rows == 0 ? kExl3PromptRows : ctx.exl3_prompt_rows;
  if (ctx.exl3_prompt_rows >= 0 && rows >= prompt_rows && PromptFits(parts, count, device))
    return RunPrompt(op, ctx, x, x_stride, rows, parts, count, device, layout.xs);
  char* ws = static_cast<char*>(ctx.workspace);
  const int bits = shapes[0].bits;
  const int l2_ahead = ctx.exl3_l2_ahead == 0 ? std::max(4, kL2AheadBytes / (128 * bits))
                                              : std::max(ctx.exl3_l2_ahead, 0);
  int share[ek::kMaxParts];  // On the host path of every linear: no allocation.
  ShareSms(shapes, count, sms, share);

  // Launches parts [first, first + n) side by side with these schedules (one each).
  auto launch = [&](int first, int n, const Schedule* c, int64_t r0, int m) -> absl::Status {
    const int ng = RowGroups(m);
    ek::LaunchParams lp{};
    ek::LaunchShape shape;
    shape.ng = ng;
    shape.tw = c[0].tw;
    shape.device = device;
    for (int i = 0; i < n; ++i) {
      FillPart(parts[first + i], shapes[first + i], layout, first + i, c[i], ws, lp.part[i]);
      ek::LinearParams& p = lp.part[i].p;
      p.x = x + r0 * x_stride;
      p.ldx = x_stride;
      p.y = parts[first + i].y + r0 * parts[first + i].y_stride;
      p.m = m;
      p.l2_ahead = l2_ahead;
      p.first_block = shape.blocks;
      shape.blocks += c[i].blocks;
      shape.warps = std::max(shape.warps, c[i].warps);
      shape.smem_bytes = std::max(shape.smem_bytes, c[i].smem_bytes);
    }
    lp.parts = n;
    ek::LinearParams& p0 = lp.part[0].p;
    if (!c[0].shared_xs) {  // n == 1: parts share a launch only with their fragments in shared.
      uint32_t* xs = reinterpret_cast<uint32_t*>(ws + layout.xs);
      const int warps = 8 * ng * static_cast<int>(k / 128);
      const int blocks = (warps + ek::kRotateWarps - 1) / ek::kRotateWarps;
      const int threads = 32 * ek::kRotateWarps;
      const cudaError_t e = ng == 4 ? ek::LaunchGrid<&ek::RotateKernel<4>>(
                                          blocks, threads, 0, device, false, ctx.stream, p0, xs)
                                    : ek::LaunchGrid<&ek::RotateKernel<8>>(
                                          blocks, threads, 0, device, false, ctx.stream, p0, xs);
      ABSL_RETURN_IF_ERROR(CudaStatus(op, e, "input rotation launch"));
      p0.xs_global = xs;
    }
    cudaError_t e = cudaSuccess;
    switch (parts[first].outs[0].view->codebook) {
      case Exl3Codebook::k3inst:
        e = ek::LaunchLinear<ek::Cb::k3inst>(bits, shape, lp, ctx.stream);
        break;
      case Exl3Codebook::kMcg:
        e = ek::LaunchLinear<ek::Cb::kMcg>(bits, shape, lp, ctx.stream);
        break;
      case Exl3Codebook::kMul1:
        e = ek::LaunchLinear<ek::Cb::kMul1>(bits, shape, lp, ctx.stream);
        break;
    }
    return CudaStatus(op, e, "linear kernel launch");
  };

  const int64_t launch_rows = LaunchRows(shapes, count);
  for (int64_t r0 = 0; r0 < rows; r0 += launch_rows) {
    const int m = static_cast<int>(std::min(rows - r0, launch_rows));
    const int ng = RowGroups(m);
    // Side by side: one item width for all (2 tiles where they differ), each part on its share.
    Schedule together[ek::kMaxParts];
    bool fits = count > 1 && ctx.exl3_separate == 0;
    int tw = TilesOf(shapes[0], ng, ctx);
    for (int i = 1; i < count; ++i)
      if (TilesOf(shapes[i], ng, ctx) != tw) tw = 2;
    for (int i = 0; fits && i < count; ++i) {
      fits = ek::ItemTilesFitPlan(ng, tw, shapes[i].L());
      if (fits) together[i] = Best(shapes[i], m, tw, share[i], ctx);
      fits = fits && together[i].feasible && together[i].shared_xs;
    }
    if (fits) {
      ABSL_RETURN_IF_ERROR(launch(0, count, together, r0, m));
      continue;
    }
    for (int i = 0; i < count; ++i) {  // One after another, each on every SM.
      const Schedule alone = Best(shapes[i], m, TilesOf(shapes[i], ng, ctx), sms, ctx);
      if (!alone.feasible)
        return absl::ResourceExhaustedError(absl::StrFormat(
            "%s: the %d k-tiles of a plan group (k=%d, plan (%d, %d)) do not fit in shared "
            "memory at %d rows",
            op, shapes[i].L(), k, shapes[i].sk, shapes[i].wk, m));
      ABSL_RETURN_IF_ERROR(launch(i, 1, &alone, r0, m));
    }
  }
  return absl::OkStatus();
}

}  // namespace exl3_run

absl::Status Exl3Linear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                        const Exl3DeviceWeight& w, float* y, int64_t y_stride) {
  const Exl3LinearOutput out{&w, y, y_stride};
  return Exl3Linears(ctx, x, x_stride, rows, &out, 1);
}

namespace {

// Each weight as a part of one whole view; InvalidArgument for a bad count or a null weight.
absl::Status ToParts(const char* op, const Exl3LinearOutput* outs, int count,
                     exl3_run::Output* views, exl3_run::Part* parts) {
  if (!outs || count < 1 || count > kMaxExl3Linears)
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %d weights, need 1..%d", op, count, kMaxExl3Linears));
  for (int i = 0; i < count; ++i) {
    if (!outs[i].w)
      return absl::InvalidArgumentError(absl::StrFormat("%s: weight %d is null", op, i));
    views[i] = {outs[i].w, 0, outs[i].w->n, 0};
    parts[i] = {&views[i], 1, outs[i].y, outs[i].y_stride};
  }
  return absl::OkStatus();
}

}  // namespace

size_t Exl3LinearsWorkspaceBytes(const Exl3LinearOutput* outs, int count, int64_t rows) {
  exl3_run::Output views[kMaxExl3Linears];
  exl3_run::Part parts[kMaxExl3Linears];
  if (!ToParts("Exl3Linears", outs, count, views, parts).ok()) return 0;
  return exl3_run::WorkspaceBytes(parts, count, rows);
}

absl::Status Exl3Linears(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                         const Exl3LinearOutput* outs, int count) {
  const char* op = count == 1 ? "Exl3Linear" : "Exl3Linears";
  exl3_run::Output views[kMaxExl3Linears];
  exl3_run::Part parts[kMaxExl3Linears];
  ABSL_RETURN_IF_ERROR(ToParts(op, outs, count, views, parts));
  for (int i = 0; i < count; ++i)
    if (reinterpret_cast<uintptr_t>(outs[i].y) % 16 != 0 || outs[i].y_stride % 4 != 0)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: y of weight %d must be 16-byte aligned with y_stride=%d a multiple of 4", op, i,
          outs[i].y_stride));  // float4 stores of y.
  return exl3_run::Run(op, ctx, x, x_stride, rows, parts, count);
}

}  // namespace twinspan::cuda
