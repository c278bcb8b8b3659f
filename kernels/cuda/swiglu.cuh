// SwiGLU of a gated MLP on the GPU, out = silu(gate) * up: the twin of kernels/cpu/swiglu.h.
// Same fp32 steps, g / (1 + exp(-g)) * u; CUDA's expf is within 2 ulp where glibc's is within 1,
// so results agree with the CPU op to a few ulp, not bit for bit.
#ifndef TWINSPAN_KERNELS_CUDA_SWIGLU_CUH_
#define TWINSPAN_KERNELS_CUDA_SWIGLU_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/context.cuh"

namespace twinspan::cuda {

// For `rows` rows of `dim` values (device memory): out[r][i] = silu(gate[r][i]) * up[r][i]; row r
// of gate and up at base + r * in_stride, of out at out + r * out_stride; out may alias gate or up
// exactly. InvalidArgument as the CPU op (dim <= 0, rows < 0, a stride below dim) and for null
// pointers. Asynchronous.
absl::Status SwiGlu(const Context& ctx, const float* gate, const float* up, int64_t in_stride,
                    int64_t rows, int64_t dim, float* out, int64_t out_stride);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_SWIGLU_CUH_
