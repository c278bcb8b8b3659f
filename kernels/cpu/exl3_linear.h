// y = x W + bias for one EXL3 weight (or a column view of one), on the CPU in fp32.
//
// Per row (every row alone, the same way whatever the row count or thread count):
//   1. xh = fp16(H128(x * suh)) per 128-block of k: fp32 multiply, exl3::Hadamard128 (fixed
//      butterfly order, then * 1/sqrt(128)), rounded to the nearest fp16 (as CUDA feeds its MMA).
//      Products xh * W_hat are then exact in fp32, so FMA contraction cannot change a bit.
//   2. yh[c] for each output column c, with (SK, WK) = weight.plan() (the stored matrix's plan,
//      so a view reduces exactly as its parent) and G = SK * WK groups of kt / G consecutive
//      16-row k-tiles (kt = k / 16; group g = s * WK + w covers tiles [g, g + 1) * kt / G):
//        group partial = fp32 sum from 0 over its tiles in increasing k, each tile's 16 rows in
//                        increasing k;
//        split s       = ((partial(s, 0) + partial(s, 1)) + ...) + partial(s, WK - 1);
//        yh            = ((split 0 + split 1) + ...) + split SK - 1.
//   3. y = H128(yh) * svh + bias per 128-block of n: exl3::Hadamard128, then one multiply by svh
//      and one add of bias (skipped when there is none), in fp32.
// W_hat values are the exact fp16 codebook outputs (common/exl3/codebook.h). Each 16 x 128 strip
// of tiles is decoded once per call and used for every row; threads split the output 128-column
// blocks, which never share a reduction, and narrow weights also their groups, whose partials are
// then folded in the order above. The steps run as AVX2 + FMA + F16C code where the CPU has it
// (kernels/cpu/exl3_linear_steps.h), with the same bits as the portable code.
#ifndef TWINSPAN_KERNELS_CPU_EXL3_LINEAR_H_
#define TWINSPAN_KERNELS_CPU_EXL3_LINEAR_H_

#include <cstdint>

#include "absl/status/status.h"
#include "common/exl3/weight.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

// x: [rows, k] with row stride x_stride floats; y: [rows, n] with row stride y_stride; they must
// not overlap. Work items are (output block, run of groups) pairs spread over ctx's pool (null
// runs inline); results are bit-identical for every pool size. Activations above 65504 in
// magnitude after the input rotation become inf, as on the GPU. InvalidArgument naming the weight
// for an unloaded weight, rows < 0, a stride smaller than its row or a null pointer with rows > 0.
absl::Status Exl3Linear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                        const exl3::Weight& w, float* y, int64_t y_stride);

// The same on a pool of num_threads made for this call (tests and tools; the backend passes its
// own pool). num_threads >= 1 counts the caller (1 runs inline); InvalidArgument when it is < 1.
absl::Status Exl3Linear(const float* x, int64_t x_stride, int64_t rows, const exl3::Weight& w,
                        float* y, int64_t y_stride, int num_threads = 1);

// One weight of Exl3Linears and where its rows go (row stride y_stride floats).
struct Exl3LinearOutput {
  const exl3::Weight* w = nullptr;
  float* y = nullptr;
  int64_t y_stride = 0;
};

// y_i = x W_i for `count` weights of one k (the linears of one input: q, k and v; gate and up; a
// head's span views), all their blocks in one parallel loop, each input rotation (one per distinct
// suh) done once. Each y_i gets the bits Exl3Linear gives it. Errors as Exl3Linear's, naming the
// weight; InvalidArgument for a null weight or weights of different k.
absl::Status Exl3Linears(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                         const Exl3LinearOutput* outs, int count);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_EXL3_LINEAR_H_
