// The kAvx512 accumulate step of cpu::Exl3Linear: AccumulateStripAvx2's sums with 16-lane FMAs
// (each rounds as the multiply-then-add it replaces, since products are exact) and 32 registers:
// up to 8 rows x 32 columns of sums stay in registers over the strip's 16 k steps, so 16 rows
// take two passes where AVX2 takes three, at twice the lanes. Built with -ffp-contract=off.
#if defined(__x86_64__)

#include <immintrin.h>

#include "kernels/cpu/exl3_linear_steps.h"

#define TWINSPAN_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")))

namespace twinspan::cpu::exl3_steps {
namespace {

constexpr int kTileRows = 16;

// kRows rows x 16 * kVectors columns of sums in registers over the strip's 16 steps.
template <int kRows, int kVectors>
TWINSPAN_AVX512 inline void AccumulateTile(const float* xh, int64_t xh_stride, const float* strip,
                                           const StripSums& out) {
  __m512 acc[kRows][kVectors];
#pragma GCC unroll 16
  for (int64_t m = 0; m < kRows; ++m) {
#pragma GCC unroll 16
    for (int64_t v = 0; v < kVectors; ++v) {
      acc[m][v] =
          out.first ? _mm512_setzero_ps() : _mm512_loadu_ps(out.sums + m * kBlockColumns + 16 * v);
    }
  }
  for (int64_t r = 0; r < kTileRows; ++r) {
    __m512 w[kVectors];
#pragma GCC unroll 16
    for (int64_t v = 0; v < kVectors; ++v) {
      w[v] = _mm512_loadu_ps(strip + r * kBlockColumns + 16 * v);
    }
#pragma GCC unroll 16
    for (int64_t m = 0; m < kRows; ++m) {
      const __m512 a = _mm512_set1_ps(xh[m * xh_stride + r]);
#pragma GCC unroll 16
      for (int64_t v = 0; v < kVectors; ++v) acc[m][v] = _mm512_fmadd_ps(a, w[v], acc[m][v]);
    }
  }
#pragma GCC unroll 16
  for (int64_t m = 0; m < kRows; ++m) {
#pragma GCC unroll 16
    for (int64_t v = 0; v < kVectors; ++v) {
      const int64_t i = m * kBlockColumns + 16 * v;
      if (out.fold == nullptr) {
        _mm512_storeu_ps(out.sums + i, acc[m][v]);
        continue;
      }
      const __m512 folded = _mm512_add_ps(_mm512_loadu_ps(out.fold + i), acc[m][v]);
      _mm512_storeu_ps(out.fold + i, folded);
      if (out.fold2 != nullptr) {
        _mm512_storeu_ps(out.fold2 + i, _mm512_add_ps(_mm512_loadu_ps(out.fold2 + i), folded));
      }
    }
  }
}

// 8 x 2 accumulators (16 FMAs in flight), 32 columns; fewer rows take wider column runs.
template <int kRows>
TWINSPAN_AVX512 void AccumulateRows(const float* xh, int64_t xh_stride, const float* strip,
                                    const StripSums& out) {
  constexpr int64_t kVectors = kRows >= 5 ? 2 : (kRows >= 3 ? 4 : 8 / kRows);
  for (int64_t c = 0; c < kBlockColumns; c += 16 * kVectors) {
    AccumulateTile<kRows, kVectors>(xh, xh_stride, strip + c, out.At(c));
  }
}

}  // namespace

void AccumulateStripAvx512(const float* xh, int64_t xh_stride, int64_t rows, const float* strip,
                           const StripSums& out) {
  constexpr RowsKernel kKernels[] = {nullptr,
                                     &AccumulateRows<1>,
                                     &AccumulateRows<2>,
                                     &AccumulateRows<3>,
                                     &AccumulateRows<4>,
                                     &AccumulateRows<5>,
                                     &AccumulateRows<6>,
                                     &AccumulateRows<7>,
                                     &AccumulateRows<8>};
  RunRowBlocks(kKernels, xh, xh_stride, rows, strip, out);
}

}  // namespace twinspan::cpu::exl3_steps

#undef TWINSPAN_AVX512

#endif  // defined(__x86_64__)
