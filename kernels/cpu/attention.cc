#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernels/cpu/dot.h"

namespace twinspan::cpu {
namespace {

struct Scratch {
  Scratch(int64_t group, int64_t head_dim)
      : keys(kAttentionKeyChunk * head_dim),
        values(kAttentionKeyChunk * head_dim),
        scores(kAttentionKeyChunk),
        chunk_out(head_dim),
        out(group * head_dim),
        running_max(group),
        running_sum(group) {}
  std::vector<float> keys, values, scores, chunk_out, out, running_max, running_sum;
};

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

// acc[i] = acc[i] * a + x[i] * b, elementwise (no reduction, so lanes cannot reorder anything).
void ScaleAdd(float* acc, float a, const float* x, float b, int64_t d) {
  for (int64_t i = 0; i < d; ++i) acc[i] = acc[i] * a + x[i] * b;
}

// One row and kv head, all `group` query heads that share it: each head runs an online softmax
// over fixed position chunks, merged in position order; the group shares each chunk's K/V reads.
void AttendGroup(const AttentionShape& shape, const float* q, int64_t group, int64_t lo, int64_t hi,
                 const KvCache& kv, int64_t kv_head, float* out, Scratch& s) {
  const int64_t d = shape.head_dim;
  std::fill(s.out.begin(), s.out.end(), 0.0f);
  std::fill(s.running_max.begin(), s.running_max.end(), -std::numeric_limits<float>::infinity());
  std::fill(s.running_sum.begin(), s.running_sum.end(), 0.0f);
  for (int64_t c0 = lo - lo % kAttentionKeyChunk; c0 < hi; c0 += kAttentionKeyChunk) {
    const int64_t a = std::max(lo, c0);
    const int64_t n = std::min(hi, c0 + kAttentionKeyChunk) - a;
    kv.ReadKeys(a, n, kv_head, s.keys.data());
    kv.ReadValues(a, n, kv_head, s.values.data());
    for (int64_t g = 0; g < group; ++g) {
      const float* qg = q + g * d;
      float chunk_max = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < n; ++k) {
        s.scores[k] = Dot(qg, &s.keys[k * d], d) * shape.scale;
        chunk_max = std::max(chunk_max, s.scores[k]);
      }
      float chunk_sum = 0.0f;
      std::fill(s.chunk_out.begin(), s.chunk_out.end(), 0.0f);
      for (int64_t k = 0; k < n; ++k) {
        const float p = std::exp(s.scores[k] - chunk_max);
        chunk_sum += p;
        ScaleAdd(s.chunk_out.data(), 1.0f, &s.values[k * d], p, d);
      }
      const float new_max = std::max(s.running_max[g], chunk_max);
      const float old_scale = std::exp(s.running_max[g] - new_max);  // 0 for the first chunk.
      const float chunk_scale = std::exp(chunk_max - new_max);
      s.running_sum[g] = s.running_sum[g] * old_scale + chunk_sum * chunk_scale;
      ScaleAdd(&s.out[g * d], old_scale, s.chunk_out.data(), chunk_scale, d);
      s.running_max[g] = new_max;
    }
  }
  for (int64_t g = 0; g < group; ++g) {
    const float inv_sum = 1.0f / s.running_sum[g];
    for (int64_t i = 0; i < d; ++i) out[g * d + i] = s.out[g * d + i] * inv_sum;
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
  for (int64_t r = 0; r < rows; ++r) {
    int64_t lo, hi;
    VisibleKeys(shape, positions[r], num_keys, &lo, &hi);
    if (positions[r] < 0 || (shape.mask == AttentionMask::kCausal && positions[r] >= num_keys) ||
        lo >= hi) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Attention: row %d at position %d sees no valid keys of %d", r, positions[r], num_keys));
    }
  }
  const int64_t group = shape.num_heads / shape.num_kv_heads;
  const int64_t d = shape.head_dim;
  ParallelFor(ctx.pool, rows * shape.num_kv_heads, 1, [&](int64_t t0, int64_t t1) {
    Scratch scratch(group, d);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r = t / shape.num_kv_heads;
      const int64_t kv_head = t % shape.num_kv_heads;
      int64_t lo, hi;
      VisibleKeys(shape, positions[r], num_keys, &lo, &hi);
      AttendGroup(shape, q + r * q_stride + kv_head * group * d, group, lo, hi, kv, kv_head,
                  out + r * out_stride + kv_head * group * d, scratch);
    }
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
