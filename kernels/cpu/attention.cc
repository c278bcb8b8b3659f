#include "kernels/cpu/attention.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernels/cpu/attention_steps.h"
#include "kernels/cpu/tree_rows.h"

namespace twinspan::cpu {
namespace {

using attention_steps::HeadState;

// Tasks per thread to aim for: enough for the pool's claiming to even out uneven runs.
constexpr int64_t kTasksPerThread = 2;

// Visible key range [lo, hi) of a row at `position`.
void VisibleKeys(const AttentionShape& shape, int64_t position, int64_t num_keys, int64_t* lo,
                 int64_t* hi) {
  if (shape.mask == AttentionMask::kCausal) {
    *hi = position + 1;
    *lo = shape.window > 0 ? std::max<int64_t>(0, position - shape.window + 1) : 0;
  } else {
    *hi = shape.window > 0 ? std::min(num_keys, position + shape.window) : num_keys;
    *lo = shape.window > 0 ? std::max<int64_t>(0, position - shape.window + 1) : 0;
  }
}

// Where keys live: position p in slot p, except positions from tree_base on (a tree window's
// rows): row r's position tree_base + i lives in slot tree_slots[r][i] (its ancestors, itself
// last).
struct KeySlots {
  int64_t tree_base = std::numeric_limits<int64_t>::max();
  const std::vector<std::vector<int64_t>>* tree_slots = nullptr;
};

// One task's working memory: a chunk of K and V as floats, one row's own chunk (a tree row's keys
// from tree_base on), the steps' scratch, and the states of its rows' query heads ([rows, group]
// of them, each with its [D] output).
struct Scratch {
  Scratch(int64_t rows, int64_t group, int64_t head_dim)
      : keys(kAttentionKeyChunk * head_dim),
        values(kAttentionKeyChunk * head_dim),
        row_keys(kAttentionKeyChunk * head_dim),
        row_values(kAttentionKeyChunk * head_dim),
        steps(attention_steps::RowChunkScratchFloats(group, head_dim, kAttentionKeyChunk)),
        outs(rows * group * head_dim),
        states(rows * group) {}
  std::vector<float> keys, values, row_keys, row_values, steps, outs;
  std::vector<HeadState> states;
};

// Row r's keys and values of positions [ra, rb) into s.row_keys / s.row_values: those below
// slots.tree_base from the run's chunk (read from position a), the rest from the row's own slots.
void ReadRowKeys(const Context& ctx, const KvCache& kv, const KeySlots& slots, int64_t r, int64_t a,
                 int64_t ra, int64_t rb, int64_t kv_head, Scratch& s) {
  const int64_t d = kv.head_dim();
  const int64_t shared = std::clamp<int64_t>(slots.tree_base - ra, 0, rb - ra);
  std::copy_n(&s.keys[(ra - a) * d], shared * d, s.row_keys.begin());
  std::copy_n(&s.values[(ra - a) * d], shared * d, s.row_values.begin());
  const std::vector<int64_t>& own = (*slots.tree_slots)[r];
  for (int64_t i = shared; i < rb - ra; ++i) {
    attention_steps::ReadChunk(ctx.isa, kv, own[ra + i - slots.tree_base], 1, kv_head,
                               &s.row_keys[i * d], &s.row_values[i * d]);
  }
}

// Rows [r0, r1) of one kv head: each chunk of keys any of them sees is read once (a tree row's
// keys from slots.tree_base on are its own), then every row that sees part of it merges its part
// into its heads' states, chunk by chunk in position order. A row's states see exactly the chunks,
// keys and order it would see alone.
void AttendRows(const Context& ctx, const AttentionShape& shape, const float* q, int64_t q_stride,
                const int64_t* lo, const int64_t* hi, int64_t r0, int64_t r1, const KvCache& kv,
                const KeySlots& slots, int64_t kv_head, float* out, int64_t out_stride,
                Scratch& s) {
  const int64_t d = shape.head_dim, group = shape.num_heads / shape.num_kv_heads;
  int64_t first = hi[r0], last = lo[r0];
  for (int64_t r = r0; r < r1; ++r) {
    first = std::min(first, lo[r]);
    last = std::max(last, hi[r]);
    for (int64_t g = 0; g < group; ++g) {
      HeadState& st = s.states[(r - r0) * group + g];
      st.out = &s.outs[((r - r0) * group + g) * d];
      attention_steps::StartHead(d, st);
    }
  }
  for (int64_t c0 = first - first % kAttentionKeyChunk; c0 < last; c0 += kAttentionKeyChunk) {
    const int64_t a = std::max(first, c0);
    const int64_t n = std::min(last, c0 + kAttentionKeyChunk) - a;
    const int64_t direct = std::clamp<int64_t>(slots.tree_base - a, 0, n);
    if (direct > 0) {
      attention_steps::ReadChunk(ctx.isa, kv, a, direct, kv_head, s.keys.data(), s.values.data());
    }
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t ra = std::max(lo[r], c0);
      const int64_t rb = std::min(hi[r], c0 + kAttentionKeyChunk);
      if (ra >= rb) continue;
      const bool own = rb > slots.tree_base;
      if (own) ReadRowKeys(ctx, kv, slots, r, a, ra, rb, kv_head, s);
      const attention_steps::RowChunk chunk{
          .q = q + r * q_stride + kv_head * group * d,
          .keys = own ? s.row_keys.data() : &s.keys[(ra - a) * d],
          .values = own ? s.row_values.data() : &s.values[(ra - a) * d],
          .n = rb - ra,
          .group = group,
          .head_dim = d,
          .scale = shape.scale};
      attention_steps::AttendRowChunk(ctx.isa, chunk, &s.states[(r - r0) * group], s.steps.data());
    }
  }
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t g = 0; g < group; ++g) {
      attention_steps::FinishHead(ctx.isa, s.states[(r - r0) * group + g], d,
                                  out + r * out_stride + (kv_head * group + g) * d);
    }
  }
}

absl::Status CheckShape(const AttentionShape& shape, int64_t q_stride, int64_t rows,
                        const KvCache& kv, int64_t out_stride) {
  if (shape.num_heads <= 0 || shape.num_kv_heads <= 0 ||
      shape.num_heads % shape.num_kv_heads != 0 || shape.head_dim != kv.head_dim() ||
      shape.num_kv_heads != kv.kv_heads() || shape.window < 0 || rows < 0 ||
      q_stride < shape.num_heads * shape.head_dim ||
      out_stride < shape.num_heads * shape.head_dim) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Attention: heads %d, kv_heads %d, head_dim %d, window %d, strides %d/%d against a cache "
        "of %d kv heads x %d dims",
        shape.num_heads, shape.num_kv_heads, shape.head_dim, shape.window, q_stride, out_stride,
        kv.kv_heads(), kv.head_dim()));
  }
  return absl::OkStatus();
}

// Every row over its visible keys [lo[r], hi[r]), in runs of rows per kv head: enough tasks for
// the pool to balance, each sharing its chunk reads.
void AttendAllRows(const Context& ctx, const AttentionShape& shape, const float* q,
                   int64_t q_stride, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi,
                   const KvCache& kv, const KeySlots& slots, float* out, int64_t out_stride) {
  const auto rows = static_cast<int64_t>(lo.size());
  if (rows == 0) return;
  const int64_t threads = ctx.pool == nullptr ? 1 : ctx.pool->num_threads();
  const int64_t runs_per_head =
      std::min(rows, (kTasksPerThread * threads + shape.num_kv_heads - 1) / shape.num_kv_heads);
  const int64_t run = std::max<int64_t>(1, (rows + runs_per_head - 1) / runs_per_head);
  const int64_t runs = (rows + run - 1) / run;
  const int64_t group = shape.num_heads / shape.num_kv_heads;
  ParallelFor(ctx.pool, runs * shape.num_kv_heads, 1, [&](int64_t t0, int64_t t1) {
    Scratch scratch(run, group, shape.head_dim);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r0 = t / shape.num_kv_heads * run;
      AttendRows(ctx, shape, q, q_stride, lo.data(), hi.data(), r0, std::min(rows, r0 + run), kv,
                 slots, t % shape.num_kv_heads, out, out_stride, scratch);
    }
  });
}

}  // namespace

absl::Status Attention(const Context& ctx, const AttentionShape& shape, const float* q,
                       int64_t q_stride, const int64_t* positions, int64_t rows, const KvCache& kv,
                       int64_t num_keys, float* out, int64_t out_stride) {
  if (absl::Status s = CheckShape(shape, q_stride, rows, kv, out_stride); !s.ok()) return s;
  if (num_keys < 1 || num_keys > kv.capacity()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Attention: num_keys %d outside [1, %d]", num_keys, kv.capacity()));
  }
  std::vector<int64_t> lo(rows), hi(rows);
  for (int64_t r = 0; r < rows; ++r) {
    VisibleKeys(shape, positions[r], num_keys, &lo[r], &hi[r]);
    if (positions[r] < 0 || (shape.mask == AttentionMask::kCausal && positions[r] >= num_keys) ||
        lo[r] >= hi[r]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Attention: row %d at position %d sees no valid keys of %d", r, positions[r], num_keys));
    }
  }
  AttendAllRows(ctx, shape, q, q_stride, lo, hi, kv, KeySlots{}, out, out_stride);
  return absl::OkStatus();
}

absl::Status TreeAttention(const Context& ctx, const AttentionShape& shape, const float* q,
                           int64_t q_stride, const int32_t* parents, int64_t rows,
                           int64_t first_slot, const KvCache& kv, float* out, int64_t out_stride) {
  if (absl::Status s = CheckShape(shape, q_stride, rows, kv, out_stride); !s.ok()) return s;
  if (absl::Status s = CheckTreeParents("TreeAttention", parents, rows); !s.ok()) return s;
  if (shape.mask != AttentionMask::kCausal || first_slot < 0 || first_slot + rows > kv.capacity()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TreeAttention: a causal mask and rows in slots [first_slot, first_slot + rows) inside "
        "the cache, got first_slot %d, %d rows, capacity %d",
        first_slot, rows, kv.capacity()));
  }
  const std::vector<int64_t> depth = TreeDepths(parents, rows);
  // slots[r] = row r's ancestors' slots, root first, itself last: what it reads from first_slot.
  std::vector<std::vector<int64_t>> slots(rows);
  std::vector<int64_t> lo(rows), hi(rows);
  for (int64_t r = 0; r < rows; ++r) {
    slots[r] = TreePath(parents, r);
    for (int64_t& row : slots[r]) row += first_slot;
    const int64_t position = first_slot + depth[r];
    VisibleKeys(shape, position, position + 1, &lo[r], &hi[r]);
  }
  AttendAllRows(ctx, shape, q, q_stride, lo, hi, kv, KeySlots{first_slot, &slots}, out, out_stride);
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
