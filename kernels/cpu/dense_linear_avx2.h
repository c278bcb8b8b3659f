// The AVX2 form of cpu::Linear's dense columns (kernels/cpu/linear.cc): each output is Dot(x_r,
// W_j) of kernels/cpu/dot.h bit for bit: the same 8 lanes (one 8-wide vector instead of two
// 4-wide ones), the same lane tree and tail, and a separate multiply and add per step (no FMA:
// these products are not exact). Internal to kernels/cpu.
#ifndef TWINSPAN_KERNELS_CPU_DENSE_LINEAR_AVX2_H_
#define TWINSPAN_KERNELS_CPU_DENSE_LINEAR_AVX2_H_

#include <cstdint>

namespace twinspan::cpu {

#if defined(__x86_64__)
// y[r * y_stride + j] = Dot(x + r * x_stride, w + j * k, k) for r < rows, j0 <= j < j1.
// REQUIRES: HasAvx2(BestIsa()).
void DenseColumnsAvx2(const float* x, int64_t x_stride, int64_t rows, const float* w, int64_t k,
                      float* y, int64_t y_stride, int64_t j0, int64_t j1);
// The same with AVX-512, two columns a register (dense_linear_avx512.cc).
// REQUIRES: BestIsa() == Isa::kAvx512.
void DenseColumnsAvx512(const float* x, int64_t x_stride, int64_t rows, const float* w, int64_t k,
                        float* y, int64_t y_stride, int64_t j0, int64_t j1);
#endif

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_DENSE_LINEAR_AVX2_H_
