// Device code of CausalConv1dTree: one thread a (channel, row). The thread walks the row's parents
// for its window (the newest input first, the state's rows past the root), then sums and applies
// SiLU exactly as CausalConv1dKernel does, so a tree row's bits are its path's chain's.
#ifndef TWINSPAN_KERNELS_CUDA_CAUSAL_CONV1D_TREE_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_CAUSAL_CONV1D_TREE_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/causal_conv1d_kernel.cuh"
#include "kernels/cuda/host_array.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::causal_conv1d_kernel {

constexpr int kMaxTreeRows = 256;
constexpr int kMaxTreeKernel = 16;  // Window rows a thread walks up for.

struct TreeParams {
  const float* x;
  int64_t channels;
  const float* weight;  // [channels, kernel]
  int kernel;
  const float* state;  // [kernel - 1, channels]
  float* y;
  HostArray<int16_t, kMaxTreeRows> parents;
};

// Grid (channel blocks, rows).
__global__ void __launch_bounds__(kThreads) CausalConv1dTreeKernel(TreeParams p) {
  StartDependent();
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= p.channels) return;
  const int row = blockIdx.y, kernel = p.kernel;
  const float* w = p.weight + c * kernel;
  // The path from the row up, newest first: at most `kernel` rows are needed.
  int nodes[kMaxTreeKernel];
  int on_path = 0;
  for (int node = row; node >= 0 && on_path < kernel; node = p.parents.v[node]) {
    nodes[on_path++] = node;
  }
  float sum = 0.0f;
  for (int j = 0; j < kernel; ++j) {
    const int back = kernel - 1 - j;  // Inputs back from the newest.
    // Past the root (the walk stopped short): the state's rows, newest next to the root.
    const float u = back < on_path
                        ? p.x[static_cast<int64_t>(nodes[back]) * p.channels + c]
                        : p.state[static_cast<int64_t>(on_path - 1 + j) * p.channels + c];
    sum = __fadd_rn(sum, __fmul_rn(w[j], u));
  }
  p.y[static_cast<int64_t>(row) * p.channels + c] = Silu(sum);
}

}  // namespace twinspan::cuda::causal_conv1d_kernel

#endif  // TWINSPAN_KERNELS_CUDA_CAUSAL_CONV1D_TREE_KERNEL_CUH_
