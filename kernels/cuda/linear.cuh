// Dense linear on the GPU, y = x @ W^T for W [out_features, in_features] stored bf16, f16 or f32:
// the dense half of kernels/cpu/linear.h (EXL3 weights run through Exl3Linear).
//
// Row-invariant: y[r, j] accumulates in fp32 with lane l of a warp taking k = 256 c + 8 l + i
// (c ascending, then i = 0..7, one fma each) and the warp butterfly summing the lanes, an order
// fixed by in_features alone; rows never mix, so every row count gives each row the same bits.
// cuBLAS is not used: its kernels (and split-K) change with the row count.
#ifndef TWINSPAN_KERNELS_CUDA_LINEAR_CUH_
#define TWINSPAN_KERNELS_CUDA_LINEAR_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/context.cuh"

namespace twinspan::cuda {

enum class DenseDtype { kF32, kBF16, kF16 };

// A dense weight on the device (see DeviceDenseWeight); non-owning. Rows are padded with zeros to
// row_pitch elements, a multiple of 8, so every lane reads whole 8-element groups.
struct DenseWeightView {
  const void* data = nullptr;  // [out_features, row_pitch] of dtype, 16-byte aligned.
  DenseDtype dtype = DenseDtype::kF32;
  int64_t out_features = 0;
  int64_t in_features = 0;
  int64_t row_pitch = 0;
};

// y[rows, out_features] = x[rows, in_features] @ W^T, x and y device fp32 with row strides x_stride
// and y_stride (floats), not overlapping. InvalidArgument as the CPU op (empty weight, rows < 0, a
// stride below the row) and for a bad pitch or null pointer. Asynchronous on ctx.stream.
absl::Status Linear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                    const DenseWeightView& w, float* y, int64_t y_stride);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_LINEAR_CUH_
