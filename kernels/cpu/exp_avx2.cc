#if defined(__x86_64__)

#include "kernels/cpu/exp_avx2.h"

#include <immintrin.h>

#include <cmath>

namespace twinspan::cpu {
namespace {

// glibc 2.36's __exp2f_data: tab[i] = bits(2^(i/32)) - (i << 47), and the scaled constants.
alignas(32) constexpr int64_t kTable[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540};
constexpr double kInvLn2N = 0x1.71547652b82fep+0 * 32;
constexpr double kShift = 0x1.8p+52;
constexpr double kC0 = 0x1.c6af84b912394p-5 / 32 / 32 / 32;
constexpr double kC1 = 0x1.ebfce50fac4f3p-3 / 32 / 32;
constexpr double kC2 = 0x1.62e42ff0c52d6p-1 / 32;
// (bits >> 20) & 0x7ff above this: |x| >= 88, inf or NaN, glibc's slow path.
constexpr int kSpecialTop = 0x42a;

// Four lanes of the fast path, in the order of glibc's FMA build.
__attribute__((target("avx2,fma"))) inline __m128 Exp4(__m128 x) {
  const __m256d xd = _mm256_cvtps_pd(x);
  const __m256d kd0 = _mm256_fmadd_pd(_mm256_set1_pd(kInvLn2N), xd, _mm256_set1_pd(kShift));
  const __m256i ki = _mm256_castpd_si256(kd0);
  const __m256d kd = _mm256_sub_pd(kd0, _mm256_set1_pd(kShift));
  const __m256d r = _mm256_fmsub_pd(_mm256_set1_pd(kInvLn2N), xd, kd);
  const __m256i index = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
  const __m256i t =
      _mm256_add_epi64(_mm256_i64gather_epi64(reinterpret_cast<const long long*>(kTable), index, 8),
                       _mm256_slli_epi64(ki, 47));
  const __m256d z = _mm256_fmadd_pd(r, _mm256_set1_pd(kC0), _mm256_set1_pd(kC1));
  const __m256d r2 = _mm256_mul_pd(r, r);
  __m256d y = _mm256_fmadd_pd(r, _mm256_set1_pd(kC2), _mm256_set1_pd(1.0));
  y = _mm256_fmadd_pd(z, r2, y);
  return _mm256_cvtpd_ps(_mm256_mul_pd(y, _mm256_castsi256_pd(t)));
}

}  // namespace

__attribute__((target("avx2,fma"))) void ExpAvx2(const float* x, int64_t n, float* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256i top =
        _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(v), 20), _mm256_set1_epi32(0x7ff));
    const int special = _mm256_movemask_ps(
        _mm256_castsi256_ps(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(kSpecialTop))));
    const __m256 e =
        _mm256_set_m128(Exp4(_mm256_extractf128_ps(v, 1)), Exp4(_mm256_castps256_ps128(v)));
    if (special == 0) {
      _mm256_storeu_ps(y + i, e);
      continue;
    }
    float lanes[8], in[8];
    _mm256_storeu_ps(lanes, e);
    _mm256_storeu_ps(in, v);
    for (int l = 0; l < 8; ++l) {
      if ((special >> l) & 1) lanes[l] = std::exp(in[l]);
    }
    _mm256_storeu_ps(y + i, _mm256_loadu_ps(lanes));
  }
  for (; i < n; ++i) y[i] = std::exp(x[i]);
}

}  // namespace twinspan::cpu

#endif  // defined(__x86_64__)
