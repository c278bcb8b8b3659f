// The causal conv of a tree window on the GPU: the twin of cpu::CausalConv1dTree
// (kernels/cpu/causal_conv1d.h).
#ifndef TWINSPAN_KERNELS_CUDA_CAUSAL_CONV1D_TREE_CUH_
#define TWINSPAN_KERNELS_CUDA_CAUSAL_CONV1D_TREE_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/context.cuh"

namespace twinspan::cuda {

// cpu::CausalConv1dTree on device memory (parents on the host), asynchronous on ctx.stream: row
// r's window is the state's rows, then x's rows along its path, summed as CausalConv1d sums, so
// y[r] has the bits CausalConv1d gives the last row of the path's chain. `state` is only read.
// InvalidArgument as the CPU op, for a null pointer, or more than 256 rows; Internal for a failed
// launch.
absl::Status CausalConv1dTree(const Context& ctx, const float* x, const int32_t* parents,
                              int64_t rows, int64_t channels, const float* weight, int64_t kernel,
                              const float* state, float* y);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_CAUSAL_CONV1D_TREE_CUH_
