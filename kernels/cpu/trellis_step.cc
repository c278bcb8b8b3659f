#include "kernels/cpu/trellis_step.h"

#include <cmath>
#include <limits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TWINSPAN_TRELLIS_AVX2 1
#endif

namespace twinspan::cpu::trellis {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

template <int K, int T>
void ScalarStepK(const StepTables& tables, const float* x, const float* const* prev,
                 float* const* next) {
  constexpr int kCodes = 1 << K, kEdges = 1 << (16 - K), kStateShift = 16 - K;
  constexpr StepShape kShape = StepShape::For(K);
  for (int t = 0; t < T; ++t) {
    for (int e = 0; e < kEdges; ++e) {
      float best = kInf;
      for (int k = 0; k < kCodes; ++k) {
        const int s = (k << kStateShift) | e;
        const float d = tables.values[s] - x[t];
        const float c = std::fma(d, d, prev[t][kShape.Index(s >> K)]);
        best = c < best ? c : best;
      }
      next[t][kShape.Index(e)] = best;
    }
  }
}

void NoOrder(const float*, float*) {}

template <int K>
constexpr Step kScalar{ScalarStepK<K, 1>, ScalarStepK<K, 2>, NoOrder};

constexpr Step kScalarSteps[] = {{},         kScalar<1>, kScalar<2>, kScalar<3>, kScalar<4>,
                                 kScalar<5>, kScalar<6>, kScalar<7>, kScalar<8>};

// How the vector steps walk the states, two 8-lane accumulators per tile per pass. K >= 3:
// out-edges e = (g << K) | c come in groups g of 2^K that share their 2^K in-edges
// (k << (16 - 2K)) | g, so one broadcast cost serves 2^K / 8 vectors of values (two groups per
// pass at K = 3, a slice of one group above). K <= 2: 16 consecutive out-edges per pass, their
// in-edges spread over the lanes.
template <int K>
struct Walk {
  static constexpr int kCodes = 1 << K, kEdges = 1 << (16 - K);
  static constexpr int kInShift = 16 - 2 * K, kStateShift = 16 - K;
  static constexpr bool kGrouped = K >= 3;
  static constexpr int kGroups = kGrouped ? 1 << (16 - 2 * K) : 0;
  static constexpr int kGroupVectors = kCodes / 8;
  static constexpr int kVectors = !kGrouped ? 2 : kGroupVectors < 2 ? kGroupVectors : 2;
  static constexpr int kBatch = kGrouped ? 2 / kVectors : 1;  // Groups per pass.
  static constexpr int kSlices = kGrouped ? kGroupVectors / kVectors : 0;

  static void Order(const float* values, float* ordered) {
    const auto copy = [&](int s) {
      for (int lane = 0; lane < 8; ++lane) *ordered++ = values[s + lane];
    };
    if constexpr (kGrouped) {
      for (int g0 = 0; g0 < kGroups; g0 += kBatch) {
        for (int slice = 0; slice < kSlices; ++slice) {
          for (int k = 0; k < kCodes; ++k) {
            for (int b = 0; b < kBatch; ++b) {
              for (int v = 0; v < kVectors; ++v) {
                copy((k << kStateShift) + ((g0 + b) << K) + (slice * kVectors + v) * 8);
              }
            }
          }
        }
      }
    } else {
      for (int e0 = 0; e0 < kEdges; e0 += 16) {
        for (int k = 0; k < kCodes; ++k) {
          for (int u = 0; u < 2; ++u) copy((k << kStateShift) + e0 + 8 * u);
        }
      }
    }
  }
};

#ifdef TWINSPAN_TRELLIS_AVX2
#define TWINSPAN_AVX2_FMA __attribute__((target("avx2,fma")))
// Fully unrolled accumulator loops keep best[][] in registers (at -O2 GCC otherwise spills it and
// every min waits on a store-to-load round trip: 3x slower).
#if defined(__clang__)
#define TWINSPAN_UNROLL _Pragma("unroll")
#else
#define TWINSPAN_UNROLL _Pragma("GCC unroll 8")
#endif

// Two tiles per call share each table load: the step is bound by L2 bandwidth for one tile (the
// 256 KB table streams in once per position) and by the FP pipes for two.
template <int K, int T>
TWINSPAN_AVX2_FMA void Avx2GroupStep(const StepTables& tables, const float* x,
                                     const float* const* prev, float* const* next) {
  using W = Walk<K>;
  constexpr StepShape kShape = StepShape::For(K);
  const float* t = tables.ordered;
  __m256 xv[T];
  TWINSPAN_UNROLL
  for (int i = 0; i < T; ++i) xv[i] = _mm256_set1_ps(x[i]);
  for (int g0 = 0; g0 < W::kGroups; g0 += W::kBatch) {
    for (int slice = 0; slice < W::kSlices; ++slice) {
      __m256 best[T][W::kBatch][W::kVectors];
      TWINSPAN_UNROLL
      for (int i = 0; i < T; ++i) {
        TWINSPAN_UNROLL
        for (int b = 0; b < W::kBatch; ++b) {
          TWINSPAN_UNROLL
          for (int v = 0; v < W::kVectors; ++v) best[i][b][v] = _mm256_set1_ps(kInf);
        }
      }
      // In-edge (k << in_shift) | g sits at k * kStride + g of a padded row.
      constexpr int kStride = (1 << W::kInShift) + kShape.pad;
      const float* in[T];
      TWINSPAN_UNROLL
      for (int i = 0; i < T; ++i) in[i] = prev[i] + g0;
      for (int k = 0; k < W::kCodes; ++k) {
        TWINSPAN_UNROLL
        for (int b = 0; b < W::kBatch; ++b) {
          __m256 p[T];
          TWINSPAN_UNROLL
          for (int i = 0; i < T; ++i) p[i] = _mm256_broadcast_ss(in[i] + b);
          TWINSPAN_UNROLL
          for (int v = 0; v < W::kVectors; ++v) {
            const __m256 w = _mm256_loadu_ps(t + 8 * (b * W::kVectors + v));
            TWINSPAN_UNROLL
            for (int i = 0; i < T; ++i) {
              const __m256 d = _mm256_sub_ps(w, xv[i]);
              best[i][b][v] = _mm256_min_ps(best[i][b][v], _mm256_fmadd_ps(d, d, p[i]));
            }
          }
        }
        t += 8 * W::kBatch * W::kVectors;
        TWINSPAN_UNROLL
        for (int i = 0; i < T; ++i) in[i] += kStride;
      }
      TWINSPAN_UNROLL
      for (int i = 0; i < T; ++i) {
        TWINSPAN_UNROLL
        for (int b = 0; b < W::kBatch; ++b) {
          // Eight consecutive edges never cross a padding gap (2^in_shift >= 8 where pad > 0).
          const int e = ((g0 + b) << K) + slice * W::kVectors * 8;
          TWINSPAN_UNROLL
          for (int v = 0; v < W::kVectors; ++v) {
            _mm256_storeu_ps(next[i] + kShape.Index(e + 8 * v), best[i][b][v]);
          }
        }
      }
    }
  }
}

template <int K, int T>
TWINSPAN_AVX2_FMA void Avx2SpreadStep(const StepTables& tables, const float* x,
                                      const float* const* prev, float* const* next) {
  using W = Walk<K>;
  const __m256i spread = K == 1 ? _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3)
                                : _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  const float* t = tables.ordered;
  __m256 xv[T];
  TWINSPAN_UNROLL
  for (int i = 0; i < T; ++i) xv[i] = _mm256_set1_ps(x[i]);
  for (int e0 = 0; e0 < W::kEdges; e0 += 16) {
    __m256 best[T][2];
    TWINSPAN_UNROLL
    for (int i = 0; i < T; ++i) best[i][0] = best[i][1] = _mm256_set1_ps(kInf);
    for (int k = 0; k < W::kCodes; ++k) {
      TWINSPAN_UNROLL
      for (int u = 0; u < 2; ++u, t += 8) {
        const int in = (k << W::kInShift) + ((e0 + 8 * u) >> K);
        const __m256 w = _mm256_loadu_ps(t);
        TWINSPAN_UNROLL
        for (int i = 0; i < T; ++i) {
          const __m128 costs = K == 1 ? _mm_loadu_ps(prev[i] + in)
                                      : _mm_castsi128_ps(_mm_loadl_epi64(
                                            reinterpret_cast<const __m128i*>(prev[i] + in)));
          const __m256 p = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(costs), spread);
          const __m256 d = _mm256_sub_ps(w, xv[i]);
          best[i][u] = _mm256_min_ps(best[i][u], _mm256_fmadd_ps(d, d, p));
        }
      }
    }
    TWINSPAN_UNROLL
    for (int i = 0; i < T; ++i) {
      _mm256_storeu_ps(next[i] + e0, best[i][0]);
      _mm256_storeu_ps(next[i] + e0 + 8, best[i][1]);
    }
  }
}

template <int K, int T>
constexpr StepFn Avx2StepFn() {
  if constexpr (K >= 3) {
    return Avx2GroupStep<K, T>;
  } else {
    return Avx2SpreadStep<K, T>;
  }
}

template <int K>
constexpr Step kAvx2{Avx2StepFn<K, 1>(), Avx2StepFn<K, 2>(), Walk<K>::Order};

constexpr Step kAvx2Steps[] = {{},       kAvx2<1>, kAvx2<2>, kAvx2<3>, kAvx2<4>,
                               kAvx2<5>, kAvx2<6>, kAvx2<7>, kAvx2<8>};

bool HasAvx2Fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#endif

}  // namespace

Step ScalarStep(int bits) { return kScalarSteps[bits]; }

Step FastStep(int bits) {
#ifdef TWINSPAN_TRELLIS_AVX2
  if (HasAvx2Fma()) return kAvx2Steps[bits];
#endif
  return kScalarSteps[bits];
}

}  // namespace twinspan::cpu::trellis
