// The recurrence of a tree window on the GPU: the twin of cpu::GatedDeltaNetTree
// (kernels/cpu/gated_delta_net.h).
#ifndef TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_TREE_CUH_
#define TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_TREE_CUH_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/gated_delta_net.h"
#include "kernels/cuda/context.cuh"

namespace twinspan::cuda {

// Bytes of ctx.workspace GatedDeltaNetTree needs: one state for every row with two or more
// children (0 for a chain-shaped tree). REQUIRES: parents passed cpu::CheckTreeParents.
size_t GatedDeltaNetTreeWorkspaceBytes(const int32_t* parents, int64_t rows,
                                       const cpu::GatedDeltaNetDims& dims);

// cpu::GatedDeltaNetTree on device memory (parents on the host), asynchronous on ctx.stream: the
// rows run depth first with GatedDeltaNet's kernels' per-row step, each from its parent's state, so
// out[r] has the bits GatedDeltaNet gives the last row of r's path's chain. `state` is only read.
// Pointers aligned as GatedDeltaNet's. InvalidArgument for the dims GatedDeltaNet refuses, bad
// parents, more than 256 rows, or a null or misaligned pointer; ResourceExhausted for a workspace
// below GatedDeltaNetTreeWorkspaceBytes; Internal for a failed launch.
absl::Status GatedDeltaNetTree(const Context& ctx, const float* qkv, const float* g,
                               const float* beta, const int32_t* parents, int64_t rows,
                               const cpu::GatedDeltaNetDims& dims, const float* state, float* out);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_TREE_CUH_
