// Attention's output gate on the GPU, x *= sigmoid(gate) elementwise, with the CPU forward's fp32
// steps x * (1 / (1 + exp(-g))); expf differs from glibc's by a few ulp, so results agree with
// the CPU backend's MulSigmoid to a few ulp.
#ifndef TWINSPAN_KERNELS_CUDA_MUL_SIGMOID_CUH_
#define TWINSPAN_KERNELS_CUDA_MUL_SIGMOID_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/context.cuh"

namespace twinspan::cuda {

// x[r, i] *= sigmoid(gate[r, i]) for `rows` rows of `dim` values (device memory), row r of x at
// x + r * x_stride and of gate at gate + r * gate_stride. InvalidArgument for dim <= 0, rows < 0,
// a stride below dim or a null pointer. Asynchronous.
absl::Status MulSigmoid(const Context& ctx, float* x, int64_t x_stride, const float* gate,
                        int64_t gate_stride, int64_t rows, int64_t dim);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_MUL_SIGMOID_CUH_
