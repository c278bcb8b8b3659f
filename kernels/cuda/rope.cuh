// Rotary position embedding on the GPU, NeoX ("rotate half") layout with partial rotary: the twin
// of kernels/cpu/rope.h. Each pair rotates with the CPU op's fp32 steps, correctly rounded and
// never fused, (a, b) -> (a cos - b sin, b cos + a sin), so the bits equal the CPU op's on x86-64.
#ifndef TWINSPAN_KERNELS_CUDA_ROPE_CUH_
#define TWINSPAN_KERNELS_CUDA_ROPE_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/context.cuh"

namespace twinspan::cuda {

// Rotates x in place (device memory): row r holds `heads` heads of head_dim floats from
// x + r * x_stride; cos/sin are [rows, rot_dim / 2] in device memory (cpu::RopeAngles, uploaded).
// InvalidArgument as the CPU op (rot_dim odd, not positive or above head_dim, heads <= 0, rows < 0,
// x_stride below heads * head_dim) and for null pointers. Asynchronous.
absl::Status Rope(const Context& ctx, float* x, int64_t x_stride, int64_t rows, int64_t heads,
                  int64_t head_dim, int64_t rot_dim, const float* cos, const float* sin);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_ROPE_CUH_
