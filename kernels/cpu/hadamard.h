// The EXL3 128-point Hadamard rotation applied to rows of activations: x <- x H per 128-block.
// H[i][j] = (-1)^popcount(i & j) / sqrt(128) is symmetric and its own inverse.
//
// Exact order (see common/exl3/hadamard.h): per 128-block, seven fp32 butterfly stages
// h = 1, 2, ..., 64, then one multiply by 1/sqrt(128). Each block of each row is independent, so
// the result never depends on the row count.
#ifndef TWINSPAN_KERNELS_CPU_HADAMARD_H_
#define TWINSPAN_KERNELS_CPU_HADAMARD_H_

#include <cstdint>

#include "absl/status/status.h"

namespace twinspan::cpu {

// In place on x[rows, cols] with row stride `stride` floats. InvalidArgument when cols is not a
// positive multiple of 128, stride < cols, rows < 0, or x is null with rows > 0.
absl::Status Hadamard128(float* x, int64_t rows, int64_t cols, int64_t stride);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_HADAMARD_H_
