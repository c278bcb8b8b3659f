// Affine 4-bit (Q4) linear on the GPU: y = x @ dequant(W)^T, any number of rows in one launch,
// every weight read once per 8 rows. Twin of kernels/cpu/q4_linear.h; the format is in
// docs/formats.md.
//
// Row-invariant: each output's reduction order depends on k alone (q4_linear_kernel.cuh), so every
// row gets the bits it gets alone, for 1..64 rows and beyond. Against cpu::Q4Linear only the order
// of the fp32 sums differs: the dequantized weights are bit-identical.
#ifndef TWINSPAN_KERNELS_CUDA_Q4_LINEAR_CUH_
#define TWINSPAN_KERNELS_CUDA_Q4_LINEAR_CUH_

#include <cuda_fp16.h>

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/exl3_linear.cuh"

namespace twinspan::cuda {

// A device-resident Q4 weight [n = out_features, k = in_features]. Non-owning.
struct Q4DeviceWeight {
  const uint8_t* codes = nullptr;         // [n][k / 2], the stored nibble layout, 16-byte aligned.
  const __half2* scale_offset = nullptr;  // [n][k / 128]: (scale, offset) per group.
  int64_t n = 0;
  int64_t k = 0;  // A multiple of 128.
};

// y[rows, n] = x[rows, k] @ dequant(W)^T, x and y device fp32 with row strides x_stride and
// y_stride in floats. Asynchronous on ctx.stream; needs no workspace. InvalidArgument naming the
// field for a null pointer, sizes that do not fit, x or the codes not 16-byte aligned or x_stride
// not a multiple of 4; Internal for a failed launch.
absl::Status Q4Linear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                      const Q4DeviceWeight& w, float* y, int64_t y_stride);

// Weights of one input in one launch (the drafter's q, k, v; gate and up): up to kMaxQ4Linears of
// one k, each on its own range of blocks, so each output gets the bits Q4Linear gives it.
inline constexpr int kMaxQ4Linears = 3;
struct Q4LinearOutput {
  const Q4DeviceWeight* w = nullptr;
  float* y = nullptr;
  int64_t y_stride = 0;
};
// InvalidArgument as Q4Linear, naming the weight, and for a count outside 1..kMaxQ4Linears or
// weights of different k.
absl::Status Q4Linears(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                       const Q4LinearOutput* outs, int count);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_Q4_LINEAR_CUH_
