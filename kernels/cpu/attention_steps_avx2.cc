// The kAvx2 steps of cpu::Attention: AVX2 + FMA code in functions marked for those instruction
// sets (ctx.isa picks them), built with -ffp-contract=off like the rest of kernels/cpu, so every
// multiply and add rounds on its own unless it is an explicit FMA of the exp below.
//
// Scores: four keys at a time, each in one 8-lane accumulator whose lanes are Dot's lo and hi.
// Exp: 8 lanes through exp_avx2.h (glibc's expf, bit for bit). Sum and P.V: one pass over the
// keys, the sum a scalar chain beside 8 vector accumulators of P.V columns.
#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/attention_steps.h"
#include "kernels/cpu/exp_avx2.h"

#define TWINSPAN_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace twinspan::cpu::attention_steps {
namespace {

// SumLanes of dot.h: lanes 0..3 are its lo, 4..7 its hi; (lo + hi), then (a0 + a2) + (a1 + a3).
TWINSPAN_AVX2 inline float SumLanes(__m256 acc) {
  const __m128 a = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  const __m128 b = _mm_add_ps(a, _mm_movehl_ps(a, a));  // b0 = a0 + a2, b1 = a1 + a3.
  return _mm_cvtss_f32(_mm_add_ss(b, _mm_shuffle_ps(b, b, 1)));
}

// s[h * n + j] = Dot(q + h * d, keys[j], d) * scale for kHeads query heads and kKeys
// consecutive keys: each key vector loads once for the heads, each query vector once for the keys.
template <int kHeads, int kKeys>
TWINSPAN_AVX2 inline void Scores(const float* q, const float* keys, int64_t d, float scale,
                                 float* s, int64_t n) {
  __m256 acc[kHeads][kKeys];
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h) {
#pragma GCC unroll 4
    for (int j = 0; j < kKeys; ++j) acc[h][j] = _mm256_setzero_ps();
  }
  const int64_t d8 = d - d % 8;
  for (int64_t i = 0; i < d8; i += 8) {
    __m256 qv[kHeads];
#pragma GCC unroll 4
    for (int h = 0; h < kHeads; ++h) qv[h] = _mm256_loadu_ps(q + h * d + i);
#pragma GCC unroll 4
    for (int j = 0; j < kKeys; ++j) {
      const __m256 kv = _mm256_loadu_ps(keys + j * d + i);
#pragma GCC unroll 4
      for (int h = 0; h < kHeads; ++h)
        acc[h][j] = _mm256_add_ps(acc[h][j], _mm256_mul_ps(qv[h], kv));
    }
  }
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h) {
#pragma GCC unroll 4
    for (int j = 0; j < kKeys; ++j) {
      float sum = SumLanes(acc[h][j]);
      for (int64_t i = d8; i < d; ++i) sum += q[h * d + i] * keys[j * d + i];
      s[h * n + j] = sum * scale;
    }
  }
}

// m = the fold (m < s ? s : m) from -inf over s[0..n): lane-wise, then over the lanes.
TWINSPAN_AVX2 inline float ChunkMax(const float* s, int64_t n) {
  const float lowest = -std::numeric_limits<float>::infinity();
  __m256 m = _mm256_set1_ps(lowest);
  const int64_t n8 = n - n % 8;
  for (int64_t k = 0; k < n8; k += 8) {
    const __m256 v = _mm256_loadu_ps(s + k);
    m = _mm256_blendv_ps(m, v, _mm256_cmp_ps(m, v, _CMP_LT_OQ));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float out = lowest;
  for (float v : lanes) out = std::max(out, v);
  for (int64_t k = n8; k < n; ++k) out = std::max(out, s[k]);
  return out;
}

// p[k] = std::exp(s[k] - m), in place.
TWINSPAN_AVX2 inline void Probabilities(float* s, int64_t n, float m) {
  const __m256 mv = _mm256_set1_ps(m);
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) _mm256_storeu_ps(s + k, _mm256_sub_ps(_mm256_loadu_ps(s + k), mv));
  for (; k < n; ++k) s[k] = s[k] - m;
  ExpAvx2(s, n, s);
}

// o[h * d + 0..8 kVectors) = sum over keys k of values[k][0..] * p[h * n + k] in key order from
// 0, for kHeads heads sharing each value load; when `sums` is not null, also sums[h] =
// ((0 + p[h * n]) + p[h * n + 1]) + ... in the same pass. Heads give independent add chains.
template <int kHeads, int kVectors>
TWINSPAN_AVX2 inline void WeightedValues(const float* values, int64_t d, const float* p, int64_t n,
                                         float* o, float* sums) {
  __m256 acc[kHeads][kVectors];
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h) {
#pragma GCC unroll 8
    for (int v = 0; v < kVectors; ++v) acc[h][v] = _mm256_setzero_ps();
  }
  float total[kHeads] = {};
  for (int64_t k = 0; k < n; ++k) {
    __m256 vk[kVectors];
#pragma GCC unroll 8
    for (int64_t v = 0; v < kVectors; ++v) vk[v] = _mm256_loadu_ps(values + k * d + 8 * v);
#pragma GCC unroll 4
    for (int h = 0; h < kHeads; ++h) {
      const float ph = p[h * n + k];
      total[h] += ph;
      const __m256 pk = _mm256_set1_ps(ph);
#pragma GCC unroll 8
      for (int v = 0; v < kVectors; ++v)
        acc[h][v] = _mm256_add_ps(acc[h][v], _mm256_mul_ps(vk[v], pk));
    }
  }
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h) {
#pragma GCC unroll 8
    for (int64_t v = 0; v < kVectors; ++v) _mm256_storeu_ps(o + h * d + 8 * v, acc[h][v]);
    if (sums != nullptr) sums[h] = total[h];
  }
}

// o[h * d + 0..d) and sums[h] as WeightedValues, over all d columns, for kHeads heads.
template <int kHeads>
TWINSPAN_AVX2 void WeightedRows(const float* values, int64_t d, const float* p, int64_t n, float* o,
                                float* sums) {
  constexpr int64_t kVectors = kHeads == 1 ? 8 : 4;
  int64_t c = 0;
  float* first = sums;
  for (; c + 8 * kVectors <= d; c += 8 * kVectors, first = nullptr) {
    WeightedValues<kHeads, kVectors>(values + c, d, p, n, o + c, first);
  }
  for (; c + 8 <= d; c += 8, first = nullptr) {
    WeightedValues<kHeads, 1>(values + c, d, p, n, o + c, first);
  }
  for (int h = 0; h < kHeads; ++h) {
    const float* ph = p + h * n;
    float* oh = o + h * d;
    for (int64_t i = c; i < d; ++i) oh[i] = 0.0f;
    for (int64_t k = 0; k < n; ++k) {
      for (int64_t i = c; i < d; ++i) oh[i] = oh[i] + values[k * d + i] * ph[k];
    }
    if (first != nullptr) {
      float total = 0.0f;
      for (int64_t k = 0; k < n; ++k) total += ph[k];
      first[h] = total;
    }
  }
}

// kHeads query heads of one row over one chunk, merged into their states.
template <int kHeads>
TWINSPAN_AVX2 void AttendHeads(const RowChunk& c, const float* q, HeadState* states, float* p,
                               float* o) {
  const int64_t d = c.head_dim, n = c.n;
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) Scores<kHeads, 4>(q, c.keys + k * d, d, c.scale, p + k, n);
  for (; k < n; ++k) Scores<kHeads, 1>(q, c.keys + k * d, d, c.scale, p + k, n);
  float chunk_max[kHeads];
  for (int h = 0; h < kHeads; ++h) {
    chunk_max[h] = ChunkMax(p + h * n, n);
    Probabilities(p + h * n, n, chunk_max[h]);
  }
  float sums[kHeads];
  WeightedRows<kHeads>(c.values, d, p, n, o, sums);
  for (int h = 0; h < kHeads; ++h) MergeChunkAvx2(o + h * d, chunk_max[h], sums[h], d, states[h]);
}

// out[i] = out[i] * a + x[i] * b.
TWINSPAN_AVX2 void ScaleAdd(float* out, float a, const float* x, float b, int64_t d) {
  const __m256 av = _mm256_set1_ps(a), bv = _mm256_set1_ps(b);
  int64_t i = 0;
  for (; i + 8 <= d; i += 8) {
    const __m256 y = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(out + i), av),
                                   _mm256_mul_ps(_mm256_loadu_ps(x + i), bv));
    _mm256_storeu_ps(out + i, y);
  }
  for (; i < d; ++i) out[i] = out[i] * a + x[i] * b;
}

// Rows of one kv head widened from bf16 (a 16-bit shift) or copied.
TWINSPAN_AVX2 void WidenRows(const void* data, bool bf16, int64_t row_size, int64_t d,
                             int64_t first, int64_t count, int64_t head, float* out) {
  for (int64_t r = 0; r < count; ++r) {
    const int64_t offset = (first + r) * row_size + head * d;
    float* dst = out + r * d;
    if (!bf16) {
      std::memcpy(dst, static_cast<const float*>(data) + offset, d * sizeof(float));
      continue;
    }
    const uint16_t* src = static_cast<const uint16_t*>(data) + offset;
    int64_t i = 0;
    for (; i + 8 <= d; i += 8) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                          _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    for (; i < d; ++i) {
      const uint32_t bits = static_cast<uint32_t>(src[i]) << 16;
      std::memcpy(dst + i, &bits, sizeof(float));
    }
  }
}

}  // namespace

TWINSPAN_AVX2 void ReadChunkAvx2(const KvCache& kv, int64_t first, int64_t count, int64_t head,
                                 float* keys, float* values) {
  const bool bf16 = kv.dtype() == KvDtype::kBF16;
  WidenRows(kv.key_data(), bf16, kv.row_size(), kv.head_dim(), first, count, head, keys);
  WidenRows(kv.value_data(), bf16, kv.row_size(), kv.head_dim(), first, count, head, values);
}

TWINSPAN_AVX2 float ChunkMaxAvx2(const float* s, int64_t n) { return ChunkMax(s, n); }

TWINSPAN_AVX2 void ProbabilitiesAvx2(float* s, int64_t n, float m) { Probabilities(s, n, m); }

TWINSPAN_AVX2 void MergeChunkAvx2(const float* o, float chunk_max, float chunk_sum, int64_t d,
                                  HeadState& st) {
  const float new_max = std::max(st.max, chunk_max);
  const float old_scale = std::exp(st.max - new_max);  // 0 for the first chunk.
  const float chunk_scale = std::exp(chunk_max - new_max);
  st.sum = st.sum * old_scale + chunk_sum * chunk_scale;
  ScaleAdd(st.out, old_scale, o, chunk_scale, d);
  st.max = new_max;
}

TWINSPAN_AVX2 void AttendRowChunkAvx2(const RowChunk& c, HeadState* states, float* scratch) {
  const int64_t d = c.head_dim, n = c.n;
  float* p = scratch;                        // [group, n]: scores, then probabilities.
  float* chunk_out = scratch + c.group * n;  // [group, D]
  for (int64_t g = 0; g < c.group;) {        // Three heads a pass: 12 accumulators of 16 registers.
    const float* q = c.q + g * d;
    switch (std::min<int64_t>(3, c.group - g)) {
      case 3:
        AttendHeads<3>(c, q, states + g, p + g * n, chunk_out + g * d);
        g += 3;
        break;
      case 2:
        AttendHeads<2>(c, q, states + g, p + g * n, chunk_out + g * d);
        g += 2;
        break;
      default:
        AttendHeads<1>(c, q, states + g, p + g * n, chunk_out + g * d);
        g += 1;
    }
  }
}

TWINSPAN_AVX2 void FinishHeadAvx2(const HeadState& state, int64_t head_dim, float* out) {
  const float inv_sum = 1.0f / state.sum;
  const __m256 inv = _mm256_set1_ps(inv_sum);
  int64_t i = 0;
  for (; i + 8 <= head_dim; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(state.out + i), inv));
  }
  for (; i < head_dim; ++i) out[i] = state.out[i] * inv_sum;
}

}  // namespace twinspan::cpu::attention_steps

#undef TWINSPAN_AVX2

#endif  // defined(__x86_64__)
