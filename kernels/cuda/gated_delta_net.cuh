// The gated delta rule of Gated DeltaNet on the GPU, recurrent form (decode and verify windows).
// Twin of cpu::GatedDeltaNet (kernels/cpu/gated_delta_net.h).
#ifndef TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_CUH_
#define TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/gated_delta_net.h"
#include "kernels/cuda/exl3_linear.cuh"  // cuda::Context, until the CUDA backend gives it a header.

namespace twinspan::cuda {

// cpu::GatedDeltaNet on device pointers, asynchronous on ctx.stream: `rows` tokens one at a time
// from the fp32 state [v_heads, k_dim, v_dim] at state_in (read once per call); the state after
// the last row goes to state_out (written once): the same buffer or a disjoint one. Row-invariant:
// a window of k rows gives the same bits as k calls of one row. Against the CPU op only the order
// of the sums over k_dim differs (see gated_delta_net_kernel.cuh). REQUIRES: qkv, the states and
// out do not overlap (but state_out may equal state_in). For k_dim 64 or 128 with v_dim % 4 == 0
// (the register kernel) they must be 16-byte aligned. InvalidArgument naming the argument for rows
// < 0, a non-positive dim, v_heads not a multiple of k_heads, k_dim above 384, a null or (where
// needed) misaligned pointer, states that partly overlap; Internal for a failed launch.
absl::Status GatedDeltaNet(const Context& ctx, const float* qkv, const float* g, const float* beta,
                           int64_t rows, const cpu::GatedDeltaNetDims& dims, const float* state_in,
                           float* state_out, float* out);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_CUH_
