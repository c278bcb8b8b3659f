// The gated delta rule of Gated DeltaNet on the GPU, chunked (WY) form for prompts: the same
// results as cpu::GatedDeltaNet within rel_fro 1e-5, from far fewer sequential steps.
//
// Prompts always take this form and cut their rows into chunks of kGatedDeltaNetChunk from the
// call's first row, so a prompt's results depend on the prompt only, as long as a prompt split
// over several calls is split at multiples of the chunk (the last call may end anywhere).
#ifndef TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_CHUNKED_CUH_
#define TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_CHUNKED_CUH_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/gated_delta_net.h"
#include "kernels/cuda/exl3_linear.cuh"  // cuda::Context, until the CUDA backend gives it a header.

namespace twinspan::cuda {

// Rows per chunk: fixed, since a chunk's sums (and so the bits) depend on it. 64 as FLA and
// transformers' torch_chunk_gated_delta_rule.
inline constexpr int64_t kGatedDeltaNetChunk = 64;

// Bytes of ctx.workspace GatedDeltaNetChunked needs for up to `rows` rows of `dims` (about 80 MB
// for the 27B from 1,024 rows up; rows are processed 1,024 at a time).
size_t GatedDeltaNetChunkedWorkspaceBytes(const cpu::GatedDeltaNetDims& dims, int64_t rows);

// Same arguments and contract as GatedDeltaNet (state [v_heads, k_dim, v_dim] fp32, updated in
// place; out [rows, v_heads, v_dim]), asynchronous on ctx.stream, all arithmetic fp32. Against the
// recurrent cpu::GatedDeltaNet: rel_fro <= 1e-5 on out and state, each element within
// 5e-5 * (rms + |ref|) (measured about 1e-6 for 27B shapes, 1,000 rows, weak and strong decay).
// Deterministic: the bits depend on the rows and their chunking, never on timing. Uses
// GatedDeltaNetChunkedWorkspaceBytes(dims, rows) bytes of ctx.workspace as scratch and leaves
// them overwritten. REQUIRES: that memory holds nothing that must persist, so not an Exl3Linear
// workspace, whose counters must stay zero.
// InvalidArgument naming the argument for the dims GatedDeltaNet refuses, k_dim above 128, or a
// null pointer; ResourceExhausted for a small workspace; Internal for a failed launch.
absl::Status GatedDeltaNetChunked(const Context& ctx, const float* qkv, const float* g,
                                  const float* beta, int64_t rows,
                                  const cpu::GatedDeltaNetDims& dims, float* state, float* out);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_CHUNKED_CUH_
