// CausalConv1d with the state read from one place and the state after a chosen row written to
// another: what makes the target's commit-by-replay cheap on the GPU (no copy of the start state).
#ifndef TWINSPAN_KERNELS_CUDA_CAUSAL_CONV1D_KEEP_CUH_
#define TWINSPAN_KERNELS_CUDA_CAUSAL_CONV1D_KEEP_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/exl3_linear.cuh"  // cuda::Context, until the CUDA backend gives it a header.

namespace twinspan::cuda {

// One convolution window: rows of x run from state_in as cpu::CausalConv1d would.
struct CausalConv1dWindow {
  const float* x = nullptr;  // [rows, channels]
  int64_t rows = 0;
  const float* state_in = nullptr;  // [kernel - 1, channels], the inputs before row 0
  int64_t keep_rows = 0;            // state_out gets the state after this many rows, 0..rows
  float* state_out = nullptr;       // Equal to state_in (in place) or disjoint; null: no state
  float* y = nullptr;               // [rows, channels]; null computes no output (a replay)
};

// y and state_out as cpu::CausalConv1d over the window, with state_out = the conv state after
// keep_rows rows, so CausalConv1dKeep(rows = n, keep_rows = n, state_out = state_in) is
// CausalConv1d. Bit-identical to CausalConv1d row for row. InvalidArgument naming the argument
// for a size out of range, keep_rows outside [0, rows], state_out overlapping state_in without
// equalling it, or a null pointer a non-empty window needs; Internal for a failed launch.
absl::Status CausalConv1dKeep(const Context& ctx, const CausalConv1dWindow& window,
                              int64_t channels, const float* weight, int64_t kernel);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_CAUSAL_CONV1D_KEEP_CUH_
