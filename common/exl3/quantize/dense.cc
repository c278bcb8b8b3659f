#include "common/exl3/quantize/dense.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/exl3/format.h"
#include "common/exl3/hadamard.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TWINSPAN_DENSE_AVX2 1
#endif

namespace twinspan::exl3::quantize {
namespace {

// Output blocks per task and the p-slice a block's operands stay in L2 for.
constexpr int64_t kBlockM = 64, kBlockN = 128, kBlockP = 256;

void ScalarBlock(int64_t i0, int64_t i1, int64_t j0, int64_t j1, int64_t r0, int64_t r1,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  for (int64_t i = i0; i < i1; ++i) {
    for (int64_t j = j0; j < j1; ++j) {
      float acc = c[i * ldc + j];
      for (int64_t r = r0; r < r1; ++r) acc = std::fma(a[r * lda + i], b[r * ldb + j], acc);
      c[i * ldc + j] = acc;
    }
  }
}

#ifdef TWINSPAN_DENSE_AVX2
// 4 x 16 of c in registers over r in [r0, r1): the same fmas, in the same order, as ScalarBlock.
__attribute__((target("avx2,fma"))) void Avx2Block(int64_t i0, int64_t i1, int64_t j0, int64_t j1,
                                                   int64_t r0, int64_t r1, const float* a,
                                                   int64_t lda, const float* b, int64_t ldb,
                                                   float* c, int64_t ldc) {
  const int64_t i4 = i0 + (i1 - i0) / 4 * 4, j16 = j0 + (j1 - j0) / 16 * 16;
  for (int64_t i = i0; i < i4; i += 4) {
    for (int64_t j = j0; j < j16; j += 16) {
      float* cp = c + i * ldc + j;
      __m256 acc0 = _mm256_loadu_ps(cp), acc1 = _mm256_loadu_ps(cp + 8);
      __m256 acc2 = _mm256_loadu_ps(cp + ldc), acc3 = _mm256_loadu_ps(cp + ldc + 8);
      __m256 acc4 = _mm256_loadu_ps(cp + 2 * ldc), acc5 = _mm256_loadu_ps(cp + 2 * ldc + 8);
      __m256 acc6 = _mm256_loadu_ps(cp + 3 * ldc), acc7 = _mm256_loadu_ps(cp + 3 * ldc + 8);
      for (int64_t r = r0; r < r1; ++r) {
        const float* br = b + r * ldb + j;
        const float* ar = a + r * lda + i;
        const __m256 b0 = _mm256_loadu_ps(br), b1 = _mm256_loadu_ps(br + 8);
        const __m256 x0 = _mm256_broadcast_ss(ar), x1 = _mm256_broadcast_ss(ar + 1);
        const __m256 x2 = _mm256_broadcast_ss(ar + 2), x3 = _mm256_broadcast_ss(ar + 3);
        acc0 = _mm256_fmadd_ps(x0, b0, acc0);
        acc1 = _mm256_fmadd_ps(x0, b1, acc1);
        acc2 = _mm256_fmadd_ps(x1, b0, acc2);
        acc3 = _mm256_fmadd_ps(x1, b1, acc3);
        acc4 = _mm256_fmadd_ps(x2, b0, acc4);
        acc5 = _mm256_fmadd_ps(x2, b1, acc5);
        acc6 = _mm256_fmadd_ps(x3, b0, acc6);
        acc7 = _mm256_fmadd_ps(x3, b1, acc7);
      }
      _mm256_storeu_ps(cp, acc0);
      _mm256_storeu_ps(cp + 8, acc1);
      _mm256_storeu_ps(cp + ldc, acc2);
      _mm256_storeu_ps(cp + ldc + 8, acc3);
      _mm256_storeu_ps(cp + 2 * ldc, acc4);
      _mm256_storeu_ps(cp + 2 * ldc + 8, acc5);
      _mm256_storeu_ps(cp + 3 * ldc, acc6);
      _mm256_storeu_ps(cp + 3 * ldc + 8, acc7);
    }
  }
  ScalarBlock(i0, i4, j16, j1, r0, r1, a, lda, b, ldb, c, ldc);
  ScalarBlock(i4, i1, j0, j1, r0, r1, a, lda, b, ldb, c, ldc);
}

bool HasAvx2Fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#endif

using BlockFn = void (*)(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, const float*,
                         int64_t, const float*, int64_t, float*, int64_t);

BlockFn FastBlock() {
#ifdef TWINSPAN_DENSE_AVX2
  if (HasAvx2Fma()) return Avx2Block;
#endif
  return ScalarBlock;
}

// row[c] = fma(-coeffs[t], panel[t][c], row[c]) for t = 0 .. width - 1 in order, c in [c0, c1).
void ScalarSubtractPanel(double* row, const double* coeffs, const double* panel,
                         int64_t panel_stride, int64_t c0, int64_t c1, int64_t width) {
  for (int64_t c = c0; c < c1; ++c) {
    double x = row[c];
    for (int64_t t = 0; t < width; ++t) x = std::fma(-coeffs[t], panel[t * panel_stride + c], x);
    row[c] = x;
  }
}

#ifdef TWINSPAN_DENSE_AVX2
// The same fmas with 16 columns in registers across all t (the row is read and written once).
__attribute__((target("avx2,fma"))) void Avx2SubtractPanel(double* row, const double* coeffs,
                                                           const double* panel,
                                                           int64_t panel_stride, int64_t c0,
                                                           int64_t c1, int64_t width) {
  int64_t c = c0;
  for (; c + 16 <= c1; c += 16) {
    __m256d x0 = _mm256_loadu_pd(row + c), x1 = _mm256_loadu_pd(row + c + 4);
    __m256d x2 = _mm256_loadu_pd(row + c + 8), x3 = _mm256_loadu_pd(row + c + 12);
    for (int64_t t = 0; t < width; ++t) {
      const __m256d s = _mm256_broadcast_sd(coeffs + t);
      const double* p = panel + t * panel_stride + c;
      x0 = _mm256_fnmadd_pd(s, _mm256_loadu_pd(p), x0);
      x1 = _mm256_fnmadd_pd(s, _mm256_loadu_pd(p + 4), x1);
      x2 = _mm256_fnmadd_pd(s, _mm256_loadu_pd(p + 8), x2);
      x3 = _mm256_fnmadd_pd(s, _mm256_loadu_pd(p + 12), x3);
    }
    _mm256_storeu_pd(row + c, x0);
    _mm256_storeu_pd(row + c + 4, x1);
    _mm256_storeu_pd(row + c + 8, x2);
    _mm256_storeu_pd(row + c + 12, x3);
  }
  ScalarSubtractPanel(row, coeffs, panel, panel_stride, c, c1, width);
}
#endif

using SubtractPanelFn = void (*)(double*, const double*, const double*, int64_t, int64_t, int64_t,
                                 int64_t);

SubtractPanelFn FastSubtractPanel() {
#ifdef TWINSPAN_DENSE_AVX2
  if (HasAvx2Fma()) return Avx2SubtractPanel;
#endif
  return ScalarSubtractPanel;
}

template <typename T>
constexpr T kScale = T{1} / 11.313708498984760390;  // 1 / sqrt(128)

template <>
constexpr float kScale<float> = kHadamardScale;

template <typename T>
void HadamardLeftT(T* x, int64_t rows, int64_t cols, int64_t stride) {
  for (int64_t r0 = 0; r0 < rows; r0 += kHadamardSize) {
    T* block = x + r0 * stride;
    for (int h = 1; h < kHadamardSize; h *= 2) {
      for (int i = 0; i < kHadamardSize; i += 2 * h) {
        for (int j = i; j < i + h; ++j) {
          T* a = block + j * stride;
          T* b = block + (j + h) * stride;
          for (int64_t c = 0; c < cols; ++c) {
            const T u = a[c], v = b[c];
            a[c] = u + v;
            b[c] = u - v;
          }
        }
      }
    }
    for (int i = 0; i < kHadamardSize; ++i) {
      T* row = block + i * stride;
      for (int64_t c = 0; c < cols; ++c) row[c] *= kScale<T>;
    }
  }
}

void Hadamard128Double(double* x) {
  for (int h = 1; h < kHadamardSize; h *= 2) {
    for (int i = 0; i < kHadamardSize; i += 2 * h) {
      for (int j = i; j < i + h; ++j) {
        const double u = x[j], v = x[j + h];
        x[j] = u + v;
        x[j + h] = u - v;
      }
    }
  }
  for (int i = 0; i < kHadamardSize; ++i) x[i] *= kScale<double>;
}

// GemmTN over the output blocks `keep` accepts (by their first row and column).
template <typename Keep>
void GemmBlocks(cpu::ThreadPool* pool, int64_t m, int64_t n, int64_t p, const float* a, int64_t lda,
                const float* b, int64_t ldb, float* c, int64_t ldc, Keep keep) {
  if (m <= 0 || n <= 0 || p <= 0) return;
  const BlockFn block = FastBlock();
  const int64_t blocks_m = (m + kBlockM - 1) / kBlockM, blocks_n = (n + kBlockN - 1) / kBlockN;
  std::vector<int64_t> tasks;
  for (int64_t t = 0; t < blocks_m * blocks_n; ++t) {
    if (keep(t / blocks_n * kBlockM, t % blocks_n * kBlockN)) tasks.push_back(t);
  }
  cpu::ParallelFor(pool, static_cast<int64_t>(tasks.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t t = tasks[task];
      const int64_t i0 = t / blocks_n * kBlockM, j0 = t % blocks_n * kBlockN;
      const int64_t i1 = std::min(m, i0 + kBlockM), j1 = std::min(n, j0 + kBlockN);
      for (int64_t r0 = 0; r0 < p; r0 += kBlockP) {
        block(i0, i1, j0, j1, r0, std::min(p, r0 + kBlockP), a, lda, b, ldb, c, ldc);
      }
    }
  });
}

}  // namespace

void GemmTN(cpu::ThreadPool* pool, int64_t m, int64_t n, int64_t p, const float* a, int64_t lda,
            const float* b, int64_t ldb, float* c, int64_t ldc) {
  GemmBlocks(pool, m, n, p, a, lda, b, ldb, c, ldc, [](int64_t, int64_t) { return true; });
}

void SymmetricRankUpdate(cpu::ThreadPool* pool, int64_t k, int64_t p, const float* x, int64_t ldx,
                         float* c, int64_t ldc) {
  // A block whose last column lies left of its first row holds no element on or above the diagonal.
  GemmBlocks(pool, k, k, p, x, ldx, x, ldx, c, ldc,
             [](int64_t i0, int64_t j0) { return j0 + kBlockN > i0; });
  // c[i][j] and c[j][i] are sums of the same products in the same order: mirroring is exact.
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < i; ++j) c[i * ldc + j] = c[j * ldc + i];
  }
}

bool CholeskyLower(cpu::ThreadPool* pool, int64_t n, double* a) {
  constexpr int64_t kPanel = 64;
  const SubtractPanelFn subtract = FastSubtractPanel();
  std::vector<double> panel;  // The panel's columns as rows: panel[t][c] = a[c][j0 + t].
  for (int64_t j0 = 0; j0 < n; j0 += kPanel) {
    const int64_t j1 = std::min(n, j0 + kPanel), width = j1 - j0;
    for (int64_t j = j0; j < j1; ++j) {  // The diagonal block, left-looking within the panel.
      double d = a[j * n + j];
      for (int64_t t = j0; t < j; ++t) d -= a[j * n + t] * a[j * n + t];
      if (!(d > 0.0) || !std::isfinite(d)) return false;
      a[j * n + j] = std::sqrt(d);
      for (int64_t i = j + 1; i < j1; ++i) {
        double s = a[i * n + j];
        for (int64_t t = j0; t < j; ++t) s -= a[i * n + t] * a[j * n + t];
        a[i * n + j] = s / a[j * n + j];
      }
    }
    cpu::ParallelFor(pool, n - j1, 16, [&](int64_t begin, int64_t end) {  // Rows below it.
      for (int64_t i = j1 + begin; i < j1 + end; ++i) {
        for (int64_t j = j0; j < j1; ++j) {
          double s = a[i * n + j];
          for (int64_t t = j0; t < j; ++t) s -= a[i * n + t] * a[j * n + t];
          a[i * n + j] = s / a[j * n + j];
        }
      }
    });
    panel.assign(static_cast<size_t>(width * n), 0.0);
    for (int64_t c = j1; c < n; ++c) {
      for (int64_t t = 0; t < width; ++t) panel[t * n + c] = a[c * n + j0 + t];
    }
    cpu::ParallelFor(pool, n - j1, 8, [&](int64_t begin, int64_t end) {  // The trailing matrix.
      for (int64_t i = j1 + begin; i < j1 + end; ++i) {
        subtract(a + i * n, a + i * n + j0, panel.data(), n, j1, i + 1, width);
      }
    });
  }
  for (int64_t i = 0; i < n; ++i) std::fill(a + i * n + i + 1, a + (i + 1) * n, 0.0);
  return true;
}

void HadamardLeft(float* x, int64_t rows, int64_t cols, int64_t stride) {
  HadamardLeftT(x, rows, cols, stride);
}

void HadamardLeft(double* x, int64_t rows, int64_t cols, int64_t stride) {
  HadamardLeftT(x, rows, cols, stride);
}

void HadamardRight(float* x, int64_t rows, int64_t cols, int64_t stride) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c0 = 0; c0 < cols; c0 += kHadamardSize) Hadamard128(x + r * stride + c0);
  }
}

void HadamardRight(double* x, int64_t rows, int64_t cols, int64_t stride) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c0 = 0; c0 < cols; c0 += kHadamardSize) Hadamard128Double(x + r * stride + c0);
  }
}

}  // namespace twinspan::exl3::quantize
