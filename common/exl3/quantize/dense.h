// The dense linear algebra the quantizer runs: a transposed matrix product, a Cholesky factor and
// the 128-block Hadamard on both sides of a matrix. Row-major; strides in elements.
//
// Exactness: each output element is computed in a fixed order that depends on the shapes only
// (GemmTN: one fma per r in increasing r, straight into c), threads split whole output blocks, and
// the AVX2 path and the scalar fallback do the same fp32 operations. So every thread count and
// every machine gives the same bits.
#ifndef TWINSPAN_COMMON_EXL3_QUANTIZE_DENSE_H_
#define TWINSPAN_COMMON_EXL3_QUANTIZE_DENSE_H_

#include <cstdint>

#include "kernels/cpu/parallel.h"

namespace twinspan::exl3::quantize {

// c[m, n] += a[p, m]^T b[p, n]: c[i][j] = fma(a[r][i], b[r][j], c[i][j]) for r = 0 .. p - 1.
// pool may be null (inline).
void GemmTN(cpu::ThreadPool* pool, int64_t m, int64_t n, int64_t p, const float* a, int64_t lda,
            const float* b, int64_t ldb, float* c, int64_t ldc);

// c[k, k] += x[p, k]^T x[p, k], the same bits GemmTN(k, k, p, x, ldx, x, ldx, c, ldc) gives, at
// about half its cost: blocks wholly below the diagonal are not computed but mirrored (c stays
// exactly symmetric).
void SymmetricRankUpdate(cpu::ThreadPool* pool, int64_t k, int64_t p, const float* x, int64_t ldx,
                         float* c, int64_t ldc);

// In place: a[n, n] (symmetric, lower triangle read) becomes its lower Cholesky factor L with
// L L^T = a, upper triangle zeroed. Returns false, leaving `a` partly overwritten, when a pivot is
// not positive and finite (a is not numerically positive definite).
bool CholeskyLower(cpu::ThreadPool* pool, int64_t n, double* a);

// x[rows, cols] <- B x, B the 128-block Sylvester Hadamard over rows (each column's 128-blocks
// rotated exactly as exl3::Hadamard128 does). REQUIRES: rows % 128 == 0.
void HadamardLeft(float* x, int64_t rows, int64_t cols, int64_t stride);
void HadamardLeft(double* x, int64_t rows, int64_t cols, int64_t stride);

// x[rows, cols] <- x B, each row's 128-blocks rotated as exl3::Hadamard128 does.
// REQUIRES: cols % 128 == 0.
void HadamardRight(float* x, int64_t rows, int64_t cols, int64_t stride);
void HadamardRight(double* x, int64_t rows, int64_t cols, int64_t stride);

}  // namespace twinspan::exl3::quantize

#endif  // TWINSPAN_COMMON_EXL3_QUANTIZE_DENSE_H_
