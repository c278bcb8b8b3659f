// Built with -ffp-contract=off (kernels/cpu/CMakeLists.txt): every multiply and add here rounds
// on its own, as Dot's do on baseline x86-64.
#if defined(__x86_64__)

#include "kernels/cpu/dense_linear_avx2.h"

#include <immintrin.h>

#define TWINSPAN_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace twinspan::cpu {
namespace {

// SumLanes of dot.h: lanes 0..3 are its lo, 4..7 its hi; (lo + hi), then (a0 + a2) + (a1 + a3).
TWINSPAN_AVX2 inline float SumLanes(__m256 acc) {
  const __m128 a = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  const __m128 b = _mm_add_ps(a, _mm_movehl_ps(a, a));  // b0 = a0 + a2, b1 = a1 + a3.
  return _mm_cvtss_f32(_mm_add_ss(b, _mm_shuffle_ps(b, b, 1)));
}

// kRows rows x kCols columns of Dot: each weight vector loaded once for the rows, each x vector
// once for the columns.
template <int kRows, int kCols>
TWINSPAN_AVX2 void DotBlock(const float* x, int64_t x_stride, const float* w, int64_t k, float* y,
                            int64_t y_stride) {
  __m256 acc[kRows][kCols];
#pragma GCC unroll 8
  for (int64_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
    for (int64_t c = 0; c < kCols; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  const int64_t k8 = k - k % 8;
  for (int64_t i = 0; i < k8; i += 8) {
    __m256 wv[kCols];
#pragma GCC unroll 8
    for (int64_t c = 0; c < kCols; ++c) wv[c] = _mm256_loadu_ps(w + c * k + i);
#pragma GCC unroll 8
    for (int64_t r = 0; r < kRows; ++r) {
      const __m256 xv = _mm256_loadu_ps(x + r * x_stride + i);
#pragma GCC unroll 8
      for (int64_t c = 0; c < kCols; ++c)
        acc[r][c] = _mm256_add_ps(acc[r][c], _mm256_mul_ps(xv, wv[c]));
    }
  }
#pragma GCC unroll 8
  for (int64_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
    for (int64_t c = 0; c < kCols; ++c) {
      float sum = SumLanes(acc[r][c]);
      for (int64_t i = k8; i < k; ++i) sum += x[r * x_stride + i] * w[c * k + i];
      y[r * y_stride + c] = sum;
    }
  }
}

// All rows of kCols columns: four rows at a time (8 accumulators at two columns), then the rest.
template <int kCols>
TWINSPAN_AVX2 void DotColumns(const float* x, int64_t x_stride, int64_t rows, const float* w,
                              int64_t k, float* y, int64_t y_stride) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    DotBlock<4, kCols>(x + r * x_stride, x_stride, w, k, y + r * y_stride, y_stride);
  }
  for (; r < rows; ++r)
    DotBlock<1, kCols>(x + r * x_stride, x_stride, w, k, y + r * y_stride, y_stride);
}

}  // namespace

TWINSPAN_AVX2 void DenseColumnsAvx2(const float* x, int64_t x_stride, int64_t rows, const float* w,
                                    int64_t k, float* y, int64_t y_stride, int64_t j0, int64_t j1) {
  int64_t j = j0;
  for (; j + 2 <= j1; j += 2) DotColumns<2>(x, x_stride, rows, w + j * k, k, y + j, y_stride);
  if (j < j1) DotColumns<1>(x, x_stride, rows, w + j * k, k, y + j, y_stride);
}

}  // namespace twinspan::cpu

#undef TWINSPAN_AVX2

#endif  // defined(__x86_64__)
