// The AVX-512 form of cpu::Linear's dense columns: Dot(x_r, W_j) bit for bit as the AVX2 form, with
// two columns in one 16-lane register (W_j's 8 lanes low, W_j+1's high) against x's 8 lanes in
// both halves, so each multiply and add does two columns' step. Built with -ffp-contract=off.
#if defined(__x86_64__)

#include <immintrin.h>

#include "kernels/cpu/dense_linear_avx2.h"

// GCC 12's AVX-512 headers start these casts and broadcasts from self-initialized vectors.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#define TWINSPAN_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")))

namespace twinspan::cpu {
namespace {

// SumLanes of dot.h on each 8-lane half: (lo + hi), then (a0 + a2) + (a1 + a3).
TWINSPAN_AVX512 inline float SumLanes(__m256 acc) {
  const __m128 a = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  const __m128 b = _mm_add_ps(a, _mm_movehl_ps(a, a));
  return _mm_cvtss_f32(_mm_add_ss(b, _mm_shuffle_ps(b, b, 1)));
}

// kRows rows x 2 kPairs columns: each pair of weight rows loaded once for the rows, each x vector
// once for the pairs.
template <int kRows, int kPairs>
TWINSPAN_AVX512 void DotBlock(const float* x, int64_t x_stride, const float* w, int64_t k, float* y,
                              int64_t y_stride) {
  __m512 acc[kRows][kPairs];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
    for (int p = 0; p < kPairs; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  const int64_t k8 = k - k % 8;
  for (int64_t i = 0; i < k8; i += 8) {
    __m512 wv[kPairs];
#pragma GCC unroll 8
    for (int p = 0; p < kPairs; ++p) {
      // W_j's 8 floats low, W_j+1's high.
      const float* wj = w + int64_t{2} * p * k + i;
      wv[p] = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(wj)),
                                 _mm256_loadu_ps(wj + k), 1);
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const float* xr = x + r * x_stride + i;  // x's 8 floats in both halves.
      const __m512 xv = _mm512_broadcast_f32x8(_mm256_loadu_ps(xr));
#pragma GCC unroll 8
      for (int p = 0; p < kPairs; ++p) {
        acc[r][p] = _mm512_add_ps(acc[r][p], _mm512_mul_ps(xv, wv[p]));
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
    for (int p = 0; p < kPairs; ++p) {
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, acc[r][p]);
      for (int half = 0; half < 2; ++half) {
        const int64_t c = 2 * p + half;
        float sum = SumLanes(_mm256_load_ps(lanes + int64_t{8} * half));
        for (int64_t i = k8; i < k; ++i) sum += x[r * x_stride + i] * w[c * k + i];
        y[r * y_stride + c] = sum;
      }
    }
  }
}

// All rows of 2 kPairs columns: four rows at a time, then the rest.
template <int kPairs>
TWINSPAN_AVX512 void DotColumns(const float* x, int64_t x_stride, int64_t rows, const float* w,
                                int64_t k, float* y, int64_t y_stride) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    DotBlock<4, kPairs>(x + r * x_stride, x_stride, w, k, y + r * y_stride, y_stride);
  }
  for (; r < rows; ++r) {
    DotBlock<1, kPairs>(x + r * x_stride, x_stride, w, k, y + r * y_stride, y_stride);
  }
}

}  // namespace

TWINSPAN_AVX512 void DenseColumnsAvx512(const float* x, int64_t x_stride, int64_t rows,
                                        const float* w, int64_t k, float* y, int64_t y_stride,
                                        int64_t j0, int64_t j1) {
  int64_t j = j0;
  for (; j + 4 <= j1; j += 4) DotColumns<2>(x, x_stride, rows, w + j * k, k, y + j, y_stride);
  if (j + 2 <= j1) {
    DotColumns<1>(x, x_stride, rows, w + j * k, k, y + j, y_stride);
    j += 2;
  }
  if (j < j1) DenseColumnsAvx2(x, x_stride, rows, w, k, y, y_stride, j, j1);
}

}  // namespace twinspan::cpu

#undef TWINSPAN_AVX512

#endif  // defined(__x86_64__)
