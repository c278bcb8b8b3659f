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
  explicit Scratch(int64_t head_dim)
      : key(head_dim),
        value(head_dim),
        chunk_out(head_dim),
        out(head_dim),
        scores(kAttentionKeyChunk) {}
  std::vector<float> key, value, chunk_out, out, scores;
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

// One (row, head): online softmax over fixed position chunks, merged in position order.
void AttendOne(const AttentionShape& shape, const float* q, int64_t lo, int64_t hi,
               const KvCache& kv, int64_t kv_head, float* out, Scratch& s) {
  const int64_t d = shape.head_dim;
  float running_max = -std::numeric_limits<float>::infinity();
  float running_sum = 0.0f;
  std::fill(s.out.begin(), s.out.end(), 0.0f);
  for (int64_t c0 = lo - lo % kAttentionKeyChunk; c0 < hi; c0 += kAttentionKeyChunk) {
    const int64_t a = std::max(lo, c0);
    const int64_t b = std::min(hi, c0 + kAttentionKeyChunk);
    float chunk_max = -std::numeric_limits<float>::infinity();
    for (int64_t k = a; k < b; ++k) {
      kv.ReadKey(k, kv_head, s.key.data());
      const float score = Dot(q, s.key.data(), d) * shape.scale;
      s.scores[k - a] = score;
      chunk_max = std::max(chunk_max, score);
    }
    float chunk_sum = 0.0f;
    std::fill(s.chunk_out.begin(), s.chunk_out.end(), 0.0f);
    for (int64_t k = a; k < b; ++k) {
      const float p = std::exp(s.scores[k - a] - chunk_max);
      chunk_sum += p;
      kv.ReadValue(k, kv_head, s.value.data());
      for (int64_t i = 0; i < d; ++i) s.chunk_out[i] += p * s.value[i];
    }
    const float new_max = std::max(running_max, chunk_max);
    const float old_scale = std::exp(running_max - new_max);  // 0 for the first chunk.
    const float chunk_scale = std::exp(chunk_max - new_max);
    running_sum = running_sum * old_scale + chunk_sum * chunk_scale;
    for (int64_t i = 0; i < d; ++i) {
      s.out[i] = s.out[i] * old_scale + s.chunk_out[i] * chunk_scale;
    }
    running_max = new_max;
  }
  const float inv_sum = 1.0f / running_sum;
  for (int64_t i = 0; i < d; ++i) out[i] = s.out[i] * inv_sum;
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
  ParallelFor(ctx.pool, rows * shape.num_heads, 1, [&](int64_t t0, int64_t t1) {
    Scratch scratch(shape.head_dim);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r = t / shape.num_heads;
      const int64_t h = t % shape.num_heads;
      int64_t lo, hi;
      VisibleKeys(shape, positions[r], num_keys, &lo, &hi);
      AttendOne(shape, q + r * q_stride + h * shape.head_dim, lo, hi, kv, h / group,
                out + r * out_stride + h * shape.head_dim, scratch);
    }
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
