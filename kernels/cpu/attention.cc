#include "kernels/cpu/attention.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernels/cpu/attention_steps.h"

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

// One task's working memory: a chunk of K and V as floats, the steps' scratch, and the states of
// its rows' query heads ([rows, group] of them, each with its [D] output).
struct Scratch {
  Scratch(int64_t rows, int64_t group, int64_t head_dim)
      : keys(kAttentionKeyChunk * head_dim),
        values(kAttentionKeyChunk * head_dim),
        steps(attention_steps::RowChunkScratchFloats(group, head_dim, kAttentionKeyChunk)),
        outs(rows * group * head_dim),
        states(rows * group) {}
  std::vector<float> keys, values, steps, outs;
  std::vector<HeadState> states;
};

// Rows [r0, r1) of one kv head: each chunk of keys any of them sees is read once, then every row
// that sees part of it merges its part into its heads' states, chunk by chunk in position order.
// A row's states see exactly the chunks, keys and order it would see alone.
void AttendRows(const Context& ctx, const AttentionShape& shape, const float* q, int64_t q_stride,
                const int64_t* lo, const int64_t* hi, int64_t r0, int64_t r1, const KvCache& kv,
                int64_t kv_head, float* out, int64_t out_stride, Scratch& s) {
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
    attention_steps::ReadChunk(ctx.isa, kv, a, n, kv_head, s.keys.data(), s.values.data());
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t ra = std::max(lo[r], c0);
      const int64_t rb = std::min(hi[r], c0 + kAttentionKeyChunk);
      if (ra >= rb) continue;
      const attention_steps::RowChunk chunk{.q = q + r * q_stride + kv_head * group * d,
                                            .keys = &s.keys[(ra - a) * d],
                                            .values = &s.values[(ra - a) * d],
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

}  // namespace

absl::Status Attention(const Context& ctx, const AttentionShape& shape, const float* q,
                       int64_t q_stride, const int64_t* positions, int64_t rows, const KvCache& kv,
                       int64_t num_keys, float* out, int64_t out_stride) {
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
  if (rows == 0) return absl::OkStatus();
  // Runs of rows per kv head: enough tasks for the pool to balance, each sharing its chunk reads.
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
                 t % shape.num_kv_heads, out, out_stride, scratch);
    }
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
