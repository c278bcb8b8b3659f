#include "kernels/cpu/exl3_linear.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/exl3/format.h"
#include "common/status.h"
#include "kernels/cpu/exl3_linear_steps.h"

namespace twinspan::cpu {
namespace {

using exl3::kTileSize;
using exl3_steps::kBlockColumns;
using exl3_steps::kStripFloats;

// Work items per thread to aim for: enough for the pool's dynamic claiming to even out threads.
constexpr int64_t kItemsPerThread = 4;
// Fewest 16 x 16 tiles an item of a split block keeps: below this a pool hand-off costs more
// than the item.
constexpr int64_t kMinTilesPerItem = 64;
// Most bytes of group partials a call keeps for split blocks.
constexpr int64_t kMaxPartialBytes = int64_t{8} << 20;
// Fewest rows per rotation task when the rotation runs on the pool.
constexpr int64_t kRowsPerRotation = 16;

absl::Status CheckOutput(const exl3::Weight& w, int64_t x_stride, int64_t rows, const float* x,
                         const float* y, int64_t y_stride) {
  if (w.k() <= 0 || rows < 0 || x_stride < w.k() || y_stride < w.n() ||
      (rows > 0 && (x == nullptr || y == nullptr))) {
    return absl::InvalidArgumentError(
        absl::StrCat("Exl3Linear on \"", w.name(), "\" [k=", w.k(), ", n=", w.n(), "]: rows ", rows,
                     ", x_stride ", x_stride, ", y_stride ", y_stride,
                     " (needs a loaded weight, rows >= 0, strides >= k and n, non-null x and y)"));
  }
  return absl::OkStatus();
}

// One weight's share of the call: its rotated input, its blocks and how each is split.
struct Job {
  const exl3::Weight* w = nullptr;
  const float* xh = nullptr;  // [rows, k]
  float* y = nullptr;
  int64_t y_stride = 0;
  int64_t blocks = 0;
  int64_t groups = 0;                 // G = SK * WK.
  int64_t chunks = 1;                 // Runs of G / chunks groups per block, one item each.
  int64_t first_item = 0;             // Items [first_item, first_item + blocks * chunks).
  std::unique_ptr<float[]> partials;  // [blocks, G, rows, 128] when chunks > 1.
  std::unique_ptr<std::atomic<int64_t>[]> pending;  // Per block: its items not yet done.
};

// One task's working memory: a strip and three [rows, 128] sums, left uninitialized (every use
// writes before it reads).
struct Scratch {
  explicit Scratch(int64_t rows)
      : strip(std::make_unique_for_overwrite<float[]>(kStripFloats)),
        partial(std::make_unique_for_overwrite<float[]>(rows * kBlockColumns)),
        split(std::make_unique_for_overwrite<float[]>(rows * kBlockColumns)),
        total(std::make_unique_for_overwrite<float[]>(rows * kBlockColumns)) {}
  std::unique_ptr<float[]> strip, partial, split, total;
};

class Runner {
 public:
  Runner(Isa isa, int64_t rows) : isa_(isa), rows_(rows), size_(rows * kBlockColumns) {}

  void RunItem(Job& job, int64_t local, Scratch& s) const {
    const int64_t block = local / job.chunks, chunk = local % job.chunks;
    const int64_t splits = job.w->plan().k_splits, warps = job.w->plan().warps;
    const int64_t tiles = job.w->k() / kTileSize / job.groups;  // k-tiles of one group.
    float* total = s.total.get();
    if (job.chunks == 1) {
      for (int64_t sk = 0; sk < splits; ++sk) {
        // Split 0 sums where the total goes and each split's first group where the split goes
        // ("total = split 0", "split = partial(s, 0)"); the other groups fold into the split, and
        // a split's last into the total, on their last strip.
        float* split = sk == 0 ? total : s.split.get();
        for (int64_t wk = 0; wk < warps; ++wk) {
          exl3_steps::StripSums out{.sums = wk == 0 ? split : s.partial.get()};
          for (int64_t i = 0; i < tiles; ++i) {
            out.first = i == 0;
            if (wk > 0 && i == tiles - 1) {
              out.fold = split;
              out.fold2 = wk == warps - 1 && sk > 0 ? total : nullptr;
            }
            Strip(job, block, (sk * warps + wk) * tiles + i, s.strip.get(), out);
          }
        }
        if (warps == 1 && sk > 0) Add(total, total, split);
      }
      Finish(job, block, s);
      return;
    }
    const int64_t per_chunk = job.groups / job.chunks;
    float* partials = job.partials.get() + block * job.groups * size_;
    for (int64_t g = chunk * per_chunk; g < (chunk + 1) * per_chunk; ++g) {
      exl3_steps::StripSums out{.sums = partials + g * size_};
      for (int64_t i = 0; i < tiles; ++i) {
        out.first = i == 0;
        Strip(job, block, g * tiles + i, s.strip.get(), out);
      }
    }
    // The block's last item to finish folds all its groups, in the same order.
    if (job.pending[block].fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    for (int64_t sk = 0; sk < splits; ++sk) {
      float* split = sk == 0 ? total : s.split.get();
      const float* first = partials + sk * warps * size_;
      if (warps == 1) std::copy(first, first + size_, split);
      for (int64_t wk = 1; wk < warps; ++wk) {
        Add(split, wk == 1 ? first : split, partials + (sk * warps + wk) * size_);
      }
      if (sk > 0) Add(total, total, split);
    }
    Finish(job, block, s);
  }

 private:
  // Decodes strip tk of the block and runs every row through it into `out`.
  void Strip(const Job& job, int64_t block, int64_t tk, float* strip,
             const exl3_steps::StripSums& out) const {
    exl3_steps::DecodeStrip(isa_, *job.w, tk, block, strip);
    exl3_steps::AccumulateStrip(isa_, job.xh + tk * kTileSize, job.w->k(), rows_, strip, out);
  }

  // out = a + b over one [rows, 128] sum (a fixed inner count, so the compiler vectorizes it).
  void Add(float* out, const float* a, const float* b) const {
    for (int64_t i = 0; i < size_; i += kBlockColumns) {
      for (int c = 0; c < kBlockColumns; ++c) out[i + c] = a[i + c] + b[i + c];
    }
  }

  void Finish(const Job& job, int64_t block, Scratch& s) const {
    const exl3::Weight& w = *job.w;
    const int64_t col0 = block * kBlockColumns;
    const float* svh = w.svh().data() + col0;
    const float* bias = w.has_bias() ? w.bias().data() + col0 : nullptr;
    for (int64_t m = 0; m < rows_; ++m) {
      exl3_steps::FinishBlock(isa_, s.total.get() + m * kBlockColumns, svh, bias,
                              job.y + m * job.y_stride + col0);
    }
  }

  const Isa isa_;
  const int64_t rows_;
  const int64_t size_;  // Floats of one [rows, 128] sum.
};

// Splits blocks into runs of groups while the call has fewer items than its threads want.
void ChooseChunks(std::vector<Job>& jobs, int64_t rows, int64_t threads) {
  if (threads <= 1) return;
  auto items = [&] {
    int64_t n = 0;
    for (const Job& j : jobs) n += j.blocks * j.chunks;
    return n;
  };
  int64_t partial_bytes = 0;
  while (items() < kItemsPerThread * threads) {
    bool split_any = false;
    for (Job& j : jobs) {
      const int64_t tiles = j.w->k() / kTileSize * exl3::kTilesPerBlock / (2 * j.chunks);
      const int64_t bytes = j.blocks * j.groups * rows * kBlockColumns * int64_t{sizeof(float)};
      const int64_t more = j.chunks == 1 ? bytes : 0;
      if (j.groups % (2 * j.chunks) != 0 || tiles < kMinTilesPerItem ||
          partial_bytes + more > kMaxPartialBytes) {
        continue;
      }
      partial_bytes += more;
      j.chunks *= 2;
      split_any = true;
    }
    if (!split_any) return;
  }
}

}  // namespace

absl::Status Exl3Linears(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                         const Exl3LinearOutput* outs, int count) {
  for (int i = 0; i < count; ++i) {
    if (outs[i].w == nullptr) return absl::InvalidArgumentError("Exl3Linears: a null weight");
    ABSL_RETURN_IF_ERROR(CheckOutput(*outs[i].w, x_stride, rows, x, outs[i].y, outs[i].y_stride));
    if (outs[i].w->k() != outs[0].w->k()) {
      return absl::InvalidArgumentError(absl::StrCat("Exl3Linears: \"", outs[i].w->name(),
                                                     "\" has k = ", outs[i].w->k(), ", \"",
                                                     outs[0].w->name(), "\" k = ", outs[0].w->k()));
    }
  }
  if (rows == 0 || count == 0) return absl::OkStatus();
  const int64_t k = outs[0].w->k();

  // Step 1, once per distinct input scale: span views and their parent share one.
  std::vector<const float*> suhs;
  std::vector<int> rotation_of(count);
  for (int i = 0; i < count; ++i) {
    const float* suh = outs[i].w->suh().data();
    auto it = std::find(suhs.begin(), suhs.end(), suh);
    rotation_of[i] = static_cast<int>(it - suhs.begin());
    if (it == suhs.end()) suhs.push_back(suh);
  }
  const int64_t rotations = static_cast<int64_t>(suhs.size());
  std::vector<float> xh(static_cast<size_t>(rotations * rows * k));
  ParallelFor(ctx.pool, rows, kRowsPerRotation, [&](int64_t m0, int64_t m1) {
    for (int64_t r = 0; r < rotations; ++r) {
      for (int64_t m = m0; m < m1; ++m) {
        exl3_steps::RotateRow(ctx.isa, x + m * x_stride, suhs[r], k,
                              xh.data() + (r * rows + m) * k);
      }
    }
  });

  std::vector<Job> jobs(count);
  for (int i = 0; i < count; ++i) {
    Job& j = jobs[i];
    j.w = outs[i].w;
    j.xh = xh.data() + rotation_of[i] * rows * k;
    j.y = outs[i].y;
    j.y_stride = outs[i].y_stride;
    j.blocks = j.w->n() / kBlockColumns;
    j.groups = int64_t{j.w->plan().k_splits} * j.w->plan().warps;
  }
  ChooseChunks(jobs, rows, ctx.pool == nullptr ? 1 : ctx.pool->num_threads());
  int64_t items = 0;
  for (Job& j : jobs) {
    j.first_item = items;
    items += j.blocks * j.chunks;
    if (j.chunks == 1) continue;
    j.partials =
        std::make_unique_for_overwrite<float[]>(j.blocks * j.groups * rows * kBlockColumns);
    j.pending = std::make_unique<std::atomic<int64_t>[]>(j.blocks);
    for (int64_t b = 0; b < j.blocks; ++b) j.pending[b].store(j.chunks, std::memory_order_relaxed);
  }

  // Steps 2 and 3: one task per thread, each claiming items (a block, or a run of its groups)
  // until none is left, so a thread that wakes late finds nothing to wait for.
  const Runner runner(ctx.isa, rows);
  const int64_t threads = ctx.pool == nullptr ? 1 : ctx.pool->num_threads();
  std::atomic<int64_t> next{0};
  ParallelFor(ctx.pool, std::min(threads, items), 1, [&](int64_t, int64_t) {
    Scratch scratch(rows);
    size_t j = 0;
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < items;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      while (i >= jobs[j].first_item + jobs[j].blocks * jobs[j].chunks) ++j;
      runner.RunItem(jobs[j], i - jobs[j].first_item, scratch);
    }
  });
  return absl::OkStatus();
}

absl::Status Exl3Linear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                        const exl3::Weight& w, float* y, int64_t y_stride) {
  const Exl3LinearOutput out{&w, y, y_stride};
  return Exl3Linears(ctx, x, x_stride, rows, &out, 1);
}

absl::Status Exl3Linear(const float* x, int64_t x_stride, int64_t rows, const exl3::Weight& w,
                        float* y, int64_t y_stride, int num_threads) {
  if (num_threads < 1) {
    return absl::InvalidArgumentError(absl::StrCat("Exl3Linear on \"", w.name(), "\": num_threads ",
                                                   num_threads, " (needs >= 1)"));
  }
  std::optional<ThreadPool> pool;
  if (num_threads > 1) pool.emplace(num_threads);
  return Exl3Linear(Context{pool ? &*pool : nullptr}, x, x_stride, rows, w, y, y_stride);
}

}  // namespace twinspan::cpu
