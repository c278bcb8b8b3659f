// Device code of GatedDeltaNetGates: one thread per (row, value head), grid-stride.
#ifndef TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_GATES_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_GATES_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::gdn_gates_kernel {

constexpr int kThreads = 256;

// Torch's softplus (beta 1, threshold 20), as the CPU op.
__device__ inline float Softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

__global__ void __launch_bounds__(kThreads)
    GatesKernel(const float* a, const float* b, int64_t ab_stride, int64_t n, int v_heads,
                const float* a_log, const float* dt_bias, float* g, float* beta) {
  StartDependent();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    const int h = static_cast<int>(i % v_heads);
    const int64_t j = i / v_heads * ab_stride + h;
    const float decay_rate = -expf(a_log[h]);
    const float bv = b[j];  // Read before writing: packed (ab_stride == v_heads), g may be a or b.
    g[i] = __fmul_rn(decay_rate, Softplus(__fadd_rn(a[j], dt_bias[h])));
    beta[i] = __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-bv)));
  }
}

}  // namespace twinspan::cuda::gdn_gates_kernel

#endif  // TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_GATES_KERNEL_CUH_
