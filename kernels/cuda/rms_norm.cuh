// RMSNorm over the last dimension on the GPU: the twin of kernels/cpu/rms_norm.h,
// y = w * (x / sqrt(mean(x^2) + eps)).
//
// Row-invariant: a row's sum of squares runs in an order fixed by dim alone (a warp per row up to
// 1,024 values, a 256-thread block beyond), so its bits never depend on the row count.
#ifndef TWINSPAN_KERNELS_CUDA_RMS_NORM_CUH_
#define TWINSPAN_KERNELS_CUDA_RMS_NORM_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/context.cuh"

namespace twinspan::cuda {

// Normalizes `rows` vectors of `dim` floats (device memory): x row r at x + r * x_stride, y row r
// at y + r * y_stride; y may equal x. `weight` has dim floats. InvalidArgument as the CPU op
// (dim <= 0, rows < 0, a stride below dim, eps < 0) and for null pointers. Asynchronous.
absl::Status RmsNorm(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                     int64_t dim, const float* weight, float eps, float* y, int64_t y_stride);

// h[rows, dim] += delta (both contiguous), then RmsNorm of h into y, in one launch: the bits of Add
// then RmsNorm. The same errors, and InvalidArgument for a null h or delta.
absl::Status AddRmsNorm(const Context& ctx, float* h, const float* delta, int64_t rows, int64_t dim,
                        const float* weight, float eps, float* y, int64_t y_stride);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_RMS_NORM_CUH_
