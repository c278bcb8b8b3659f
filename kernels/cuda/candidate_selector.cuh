// DFlash2's candidate selector walk on the GPU. Twin of cpu::SelectorWalk
// (kernels/cpu/candidate_selector.h). Host code only (C++20: the spans), so the entry lives in
// candidate_selector.cc and launches through candidate_selector_launch.h.
#ifndef TWINSPAN_KERNELS_CUDA_CANDIDATE_SELECTOR_CUH_
#define TWINSPAN_KERNELS_CUDA_CANDIDATE_SELECTOR_CUH_

#include "absl/status/status.h"
#include "kernels/cpu/candidate_selector.h"
#include "kernels/cuda/exl3_linear.cuh"  // cuda::Context, until the CUDA backend gives it a header.

namespace twinspan::cuda {

// cpu::SelectorWalk in one block, asynchronous on ctx.stream. candidate_ids, unary,
// hidden_projection, the codebooks' data and the outputs are device memory; uniforms are host
// memory (at most 64, passed by value with the launch), as the anchor id is.
// Scores are the CPU op's bits (each edge is the same in-order sum of separately rounded
// products), so greedy proposals equal the CPU op's; sampled probabilities differ by expf's few
// ulps, which moves a draw only when its uniform lies within that of a cumulative boundary.
// Errors: the CPU op's InvalidArgument for every host-checkable argument, and InvalidArgument for
// slots above 64, top_k above 256, or a walk needing more than 48 KB of shared memory (about
// top_k x (rank + 1) + rank floats); Internal for a failed launch. Candidate ids live on the
// device and are checked there: an id outside [0, V) makes every proposal -1 and every score (and
// probability) NaN, with no codebook row read.
absl::Status SelectorWalk(const Context& ctx, const cpu::SelectorWalkInputs& inputs,
                          const cpu::SelectorWalkOutputs& outputs,
                          const cpu::SelectorWalkParams& params);

// cpu::SelectorScoreTable on device memory, asynchronous on ctx.stream: one block per (slot,
// previous candidate), each edge the same in-order sum as the walk's, so the table holds the CPU
// op's bits. Errors as SelectorWalk's (its limits on top_k and shared memory; any slot count); a
// candidate id outside [0, V) makes the table NaN.
absl::Status SelectorScoreTable(const Context& ctx, const cpu::SelectorWalkInputs& inputs,
                                std::span<float> table, const cpu::SelectorWalkParams& params);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_CANDIDATE_SELECTOR_CUH_
