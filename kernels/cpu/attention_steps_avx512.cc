// The kAvx512 step of cpu::Attention: the kAvx2 step's bits with half its vector operations.
// Scores: two keys a 16-lane register (key k's 8 dims low, key k + 1's high, q's 8 dims in both
// halves), so each lane still sums Dot's lane in Dot's order. P.V: sixteen dims a register, each
// dim a chain of adds in key order. Max, exp and the merge are the kAvx2 step's own.
// Built with -ffp-contract=off: no multiply and add fuse here.
#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/attention_steps.h"

// GCC 12's AVX-512 headers start these casts and broadcasts from self-initialized vectors.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#define TWINSPAN_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")))

namespace twinspan::cpu::attention_steps {
namespace {

// SumLanes of dot.h: lanes 0..3 are its lo, 4..7 its hi; (lo + hi), then (a0 + a2) + (a1 + a3).
TWINSPAN_AVX512 inline float SumLanes(__m256 acc) {
  const __m128 a = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  const __m128 b = _mm_add_ps(a, _mm_movehl_ps(a, a));
  return _mm_cvtss_f32(_mm_add_ss(b, _mm_shuffle_ps(b, b, 1)));
}

// s[h * n + 2 p + half] = Dot(q + h * d, keys[2 p + half], d) * scale for kHeads query heads and
// kPairs pairs of consecutive keys: each pair's register loads once for the heads.
template <int kHeads, int kPairs>
TWINSPAN_AVX512 inline void ScorePairs(const float* q, const float* keys, int64_t d, float scale,
                                       float* s, int64_t n) {
  __m512 acc[kHeads][kPairs];
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h) {
#pragma GCC unroll 4
    for (int p = 0; p < kPairs; ++p) acc[h][p] = _mm512_setzero_ps();
  }
  const int64_t d8 = d - d % 8;
  for (int64_t i = 0; i < d8; i += 8) {
    __m512 qv[kHeads];
#pragma GCC unroll 4
    for (int h = 0; h < kHeads; ++h) qv[h] = _mm512_broadcast_f32x8(_mm256_loadu_ps(q + h * d + i));
#pragma GCC unroll 4
    for (int p = 0; p < kPairs; ++p) {
      const float* k0 = keys + int64_t{2} * p * d + i;
      const __m512 kv = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(k0)),
                                           _mm256_loadu_ps(k0 + d), 1);
#pragma GCC unroll 4
      for (int h = 0; h < kHeads; ++h)
        acc[h][p] = _mm512_add_ps(acc[h][p], _mm512_mul_ps(qv[h], kv));
    }
  }
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h) {
#pragma GCC unroll 4
    for (int p = 0; p < kPairs; ++p) {
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, acc[h][p]);
      for (int half = 0; half < 2; ++half) {
        const float* key = keys + (2 * p + half) * d;
        float sum = SumLanes(_mm256_load_ps(lanes + int64_t{8} * half));
        for (int64_t i = d8; i < d; ++i) sum += q[h * d + i] * key[i];
        s[h * n + int64_t{2} * p + half] = sum * scale;
      }
    }
  }
}

// Dot(q, key, d) * scale for a lone key, in one 8-lane register.
TWINSPAN_AVX512 inline float ScoreOne(const float* q, const float* key, int64_t d, float scale) {
  __m256 acc = _mm256_setzero_ps();
  const int64_t d8 = d - d % 8;
  for (int64_t i = 0; i < d8; i += 8) {
    acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(key + i)));
  }
  float sum = SumLanes(acc);
  for (int64_t i = d8; i < d; ++i) sum += q[i] * key[i];
  return sum * scale;
}

// o[h * d + 0..16 kVectors) = sum over keys k of values[k][0..] * p[h * n + k] in key order from
// 0, for kHeads heads sharing each value load; when `sums` is not null, also sums[h] = the
// in-order sum of p[h * n + k]. Heads give independent add chains.
template <int kHeads, int kVectors>
TWINSPAN_AVX512 inline void WeightedValues(const float* values, int64_t d, const float* p,
                                           int64_t n, float* o, float* sums) {
  __m512 acc[kHeads][kVectors];
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h) {
#pragma GCC unroll 8
    for (int v = 0; v < kVectors; ++v) acc[h][v] = _mm512_setzero_ps();
  }
  float total[kHeads] = {};
  for (int64_t k = 0; k < n; ++k) {
    __m512 vk[kVectors];
#pragma GCC unroll 8
    for (int64_t v = 0; v < kVectors; ++v) vk[v] = _mm512_loadu_ps(values + k * d + 16 * v);
#pragma GCC unroll 4
    for (int h = 0; h < kHeads; ++h) {
      const float ph = p[h * n + k];
      total[h] += ph;
      const __m512 pk = _mm512_set1_ps(ph);
#pragma GCC unroll 8
      for (int v = 0; v < kVectors; ++v)
        acc[h][v] = _mm512_add_ps(acc[h][v], _mm512_mul_ps(vk[v], pk));
    }
  }
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h) {
#pragma GCC unroll 8
    for (int64_t v = 0; v < kVectors; ++v) _mm512_storeu_ps(o + h * d + 16 * v, acc[h][v]);
    if (sums != nullptr) sums[h] = total[h];
  }
}

// o[h * d + 0..d) and sums[h] as WeightedValues, over all d columns, for kHeads heads.
template <int kHeads>
TWINSPAN_AVX512 void WeightedRows(const float* values, int64_t d, const float* p, int64_t n,
                                  float* o, float* sums) {
  int64_t c = 0;
  float* first = sums;
  for (; c + 64 <= d; c += 64, first = nullptr) {
    WeightedValues<kHeads, 4>(values + c, d, p, n, o + c, first);
  }
  for (; c + 16 <= d; c += 16, first = nullptr) {
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
TWINSPAN_AVX512 void AttendHeads(const RowChunk& c, const float* q, HeadState* states, float* p,
                                 float* o) {
  const int64_t d = c.head_dim, n = c.n;
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) ScorePairs<kHeads, 4>(q, c.keys + k * d, d, c.scale, p + k, n);
  for (; k + 2 <= n; k += 2) ScorePairs<kHeads, 1>(q, c.keys + k * d, d, c.scale, p + k, n);
  if (k < n) {
    for (int h = 0; h < kHeads; ++h) p[h * n + k] = ScoreOne(q + h * d, c.keys + k * d, d, c.scale);
  }
  float chunk_max[kHeads];
  for (int h = 0; h < kHeads; ++h) {
    chunk_max[h] = ChunkMaxAvx2(p + h * n, n);
    ProbabilitiesAvx2(p + h * n, n, chunk_max[h]);
  }
  float sums[kHeads];
  WeightedRows<kHeads>(c.values, d, p, n, o, sums);
  for (int h = 0; h < kHeads; ++h) MergeChunkAvx2(o + h * d, chunk_max[h], sums[h], d, states[h]);
}

}  // namespace

TWINSPAN_AVX512 void AttendRowChunkAvx512(const RowChunk& c, HeadState* states, float* scratch) {
  const int64_t d = c.head_dim, n = c.n;
  float* p = scratch;                        // [group, n]: scores, then probabilities.
  float* chunk_out = scratch + c.group * n;  // [group, D]
  for (int64_t g = 0; g < c.group;) {        // Three heads a pass: 12 accumulators.
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

}  // namespace twinspan::cpu::attention_steps

#undef TWINSPAN_AVX512

#endif  // defined(__x86_64__)
