// Gated DeltaNet's per-row decay and write strength on the GPU. Twin of cpu::GatedDeltaNetGates
// (kernels/cpu/gated_delta_net.h).
#ifndef TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_GATES_CUH_
#define TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_GATES_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/exl3_linear.cuh"  // cuda::Context, until the CUDA backend gives it a header.

namespace twinspan::cuda {

// g = -exp(a_log) * softplus(a + dt_bias), beta = sigmoid(b) on device pointers, asynchronous on
// ctx.stream; the CPU op's expressions with CUDA's expf / log1pf (a few ulps from glibc's).
// a, b: rows of ab_stride floats, v_heads used; g, beta: [rows, v_heads]; a_log, dt_bias:
// [v_heads]. Elementwise, so row-invariant. InvalidArgument for rows < 0, v_heads <= 0,
// ab_stride < v_heads or a null pointer; Internal for a failed launch.
absl::Status GatedDeltaNetGates(const Context& ctx, const float* a, const float* b,
                                int64_t ab_stride, int64_t rows, int64_t v_heads,
                                const float* a_log, const float* dt_bias, float* g, float* beta);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_GATES_CUH_
