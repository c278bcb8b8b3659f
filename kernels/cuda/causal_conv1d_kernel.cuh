// Device code of CausalConv1dKeep: one thread per (channel, run of rows).
//
// y[t, c] = silu(sum_j weight[c, j] * u[t + j, c]) with u = the state's kernel - 1 rows, then x.
// An output depends on inputs only, never on another output, so every row runs on its own thread
// in the CPU twin's order (j ascending, each product and add rounded on its own as the CPU's
// separate operations are). That order does not depend on the row count, hence row invariance.
// Runs of at least kernel - 1 rows mean only a channel's first run reads the state, so that
// thread writes the new state too, after its reads: in place is safe. Bytes: x and y once, the
// state (3 x 10,240 floats for the 27B) read and written once; weights come from L1.
#ifndef TWINSPAN_KERNELS_CUDA_CAUSAL_CONV1D_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_CAUSAL_CONV1D_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::causal_conv1d_kernel {

constexpr int kThreads = 128;    // Channels per block.
constexpr int kRowsPerRun = 16;  // Rows per thread, unless kernel - 1 is larger.

struct Params {
  const float* x;
  int64_t rows;
  int64_t channels;
  const float* weight;  // [channels, kernel]
  int kernel;
  int64_t rows_per_run;  // >= max(kRowsPerRun, kernel - 1)
  const float* state_in;
  int64_t keep_rows;
  float* state_out;
  float* y;
};

// silu(s) = s / (1 + exp(-s)), rounded step by step as the CPU op.
__device__ inline float Silu(float s) { return __fdiv_rn(s, __fadd_rn(1.0f, expf(-s))); }

// kKernel > 0 fixes the kernel width at compile time (4 for Qwen3.5); 0 reads it from p.
template <int kKernel>
__global__ void __launch_bounds__(kThreads) CausalConv1dKernel(Params p) {
  StartDependent();
  const int kernel = kKernel > 0 ? kKernel : p.kernel;
  const int64_t history = kernel - 1;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= p.channels) return;
  const float* w = p.weight + c * kernel;
  // u[i]: the state for i < history, else row i - history of x (an address select, no branch).
  auto u = [&](int64_t i) {
    return *(i < history ? p.state_in + i * p.channels + c : p.x + (i - history) * p.channels + c);
  };
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * p.rows_per_run;
  const int64_t t1 = t0 + p.rows_per_run < p.rows ? t0 + p.rows_per_run : p.rows;
  if (p.y != nullptr) {  // Else a replay: only the state below.
    if constexpr (kKernel > 0) {
      // The run's inputs are loaded together first (one dependent L2 load a row made a 16-row run
      // ~10 us); past the run's end they repeat its last input and feed nothing.
      constexpr int kWindow = kRowsPerRun + kKernel - 1;
      float wj[kKernel];
#pragma unroll
      for (int j = 0; j < kKernel; ++j) wj[j] = w[j];
      for (int64_t ta = t0; ta < t1; ta += kRowsPerRun) {
        float uw[kWindow];
#pragma unroll
        for (int i = 0; i < kWindow; ++i)
          uw[i] = u(ta + i < t1 + history ? ta + i : t1 + history - 1);
#pragma unroll
        for (int r = 0; r < kRowsPerRun; ++r) {
          if (ta + r >= t1) break;
          float sum = 0.0f;
#pragma unroll
          for (int j = 0; j < kKernel; ++j) sum = __fadd_rn(sum, __fmul_rn(wj[j], uw[r + j]));
          p.y[(ta + r) * p.channels + c] = Silu(sum);
        }
      }
    } else {
      for (int64_t t = t0; t < t1; ++t) {
        float sum = 0.0f;
        for (int j = 0; j < kernel; ++j) sum = __fadd_rn(sum, __fmul_rn(w[j], u(t + j)));
        p.y[t * p.channels + c] = Silu(sum);
      }
    }
  }
  // New state[j] = u[keep + j]; ascending j reads index keep + j >= j before it is overwritten.
  if (blockIdx.y == 0 && p.state_out != nullptr) {
    for (int64_t j = 0; j < history; ++j) p.state_out[j * p.channels + c] = u(p.keep_rows + j);
  }
}

}  // namespace twinspan::cuda::causal_conv1d_kernel

#endif  // TWINSPAN_KERNELS_CUDA_CAUSAL_CONV1D_KERNEL_CUH_
