// The inner steps of cpu::Exl3Linear (kernels/cpu/exl3_linear.h), one implementation per
// instruction set (cpu::Isa): kPortable (any x86-64 or ARM64 build), kAvx2 (x86-64 with AVX2,
// FMA and F16C, picked at run time) and, for the accumulate step, kAvx512. Every step gives the
// same bits on every instruction set: the reduction order is the one documented in exl3_linear.h,
// products xh * W_hat are exact in fp32 (so an FMA rounds as a multiply then an add does), and
// elementwise steps are single IEEE operations in a fixed order. One exception: from NaN inputs
// both give NaN in the same places, but which input NaN's payload an add keeps is the compiler's
// choice (it may swap the operands of a commutative add), as it already was for the scalar code.
// Internal to kernels/cpu; tests call it to compare the two.
#ifndef TWINSPAN_KERNELS_CPU_EXL3_LINEAR_STEPS_H_
#define TWINSPAN_KERNELS_CPU_EXL3_LINEAR_STEPS_H_

#include <cstdint>
#include <span>

#include "common/exl3/weight.h"
#include "kernels/cpu/isa.h"

namespace twinspan::cpu::exl3_steps {

// Columns of one output block and floats of one decoded 16 x 128 strip of tiles.
inline constexpr int kBlockColumns = 128;
inline constexpr int kStripFloats = 16 * kBlockColumns;

// Step 1 for one row: xh[i] = fp16(H128(x * suh))[i] for i < k (k a multiple of 128).
void RotateRow(Isa isa, const float* x, const float* suh, int64_t k, float* xh);

// strip[r * 128 + c] = W_hat(16 * tk + r, 128 * block + c) of w: the 8 tiles of one strip.
void DecodeStrip(Isa isa, const exl3::Weight& w, int64_t tk, int64_t block, float* strip);

// Where AccumulateStrip's running sums start and where they end (each [rows, 128], row stride 128
// floats): folding a group's sums into its split (and the split into the total) on its last
// strip saves a pass over them.
struct StripSums {
  float* sums = nullptr;   // The running sums between a group's strips.
  bool first = false;      // A group's first strip: start from 0 instead of loading sums.
  float* fold = nullptr;   // A group's last strip: fold = fold + sums (sums itself is not stored).
  float* fold2 = nullptr;  // With fold: then fold2 = fold2 + fold (a split's last group).

  // The same targets `offset` floats further on.
  StripSums At(int64_t offset) const {
    return {sums + offset, first, fold == nullptr ? nullptr : fold + offset,
            fold2 == nullptr ? nullptr : fold2 + offset};
  }
};

// sums[m * 128 + c] = (first ? 0 : sums[m * 128 + c]) + xh[m * xh_stride + r] * strip[r * 128 + c]
// over r = 0..15 in increasing order (one rounding per step), for each m < rows and c; then
// stored, or folded as StripSums says.
void AccumulateStrip(Isa isa, const float* xh, int64_t xh_stride, int64_t rows, const float* strip,
                     const StripSums& out);

// One accumulate kernel for a fixed number of rows, and the row blocks of a strip through a table
// of them: kernels[r] runs r rows (kernels[0] unused), the largest as often as it fits.
using RowsKernel = void (*)(const float* xh, int64_t xh_stride, const float* strip,
                            const StripSums& out);
void RunRowBlocks(std::span<const RowsKernel> kernels, const float* xh, int64_t xh_stride,
                  int64_t rows, const float* strip, const StripSums& out);

// Step 3 for one row of one block: out[c] = H128(total)[c] * svh[c] (+ bias[c] when bias is not
// null); total is overwritten.
void FinishBlock(Isa isa, float* total, const float* svh, const float* bias, float* out);

#if defined(__x86_64__)
// The kAvx2 steps (exl3_linear_steps_avx2.cc). REQUIRES: HasAvx2(BestIsa()).
void RotateRowAvx2(const float* x, const float* suh, int64_t k, float* xh);
void DecodeStripAvx2(const exl3::Weight& w, int64_t tk, int64_t block, float* strip);
void AccumulateStripAvx2(const float* xh, int64_t xh_stride, int64_t rows, const float* strip,
                         const StripSums& out);
void FinishBlockAvx2(float* total, const float* svh, const float* bias, float* out);
// The kAvx512 accumulate (exl3_linear_steps_avx512.cc); the other steps run their kAvx2 form.
// REQUIRES: BestIsa() == Isa::kAvx512.
void AccumulateStripAvx512(const float* xh, int64_t xh_stride, int64_t rows, const float* strip,
                           const StripSums& out);
#endif

}  // namespace twinspan::cpu::exl3_steps

#endif  // TWINSPAN_KERNELS_CPU_EXL3_LINEAR_STEPS_H_
