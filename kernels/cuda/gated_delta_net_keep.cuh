// GatedDeltaNet reading the state from one place and writing the state after a chosen row to
// another (or nowhere): what makes the target's commit-by-replay cheap on the GPU.
//
// Bytes a round for the 27B (one layer, 3,145,728-byte state). The CPU scheme done on the GPU
// (copy the start state, run the window in place, copy it back and replay) moves 25.2 MB when a
// draft is rejected and 12.6 MB when all are kept.
//   Two buffers (what services/target does): forward {state_in = S, state_out = S'} reads and
//   writes 6.3 MB; keeping every row makes S' live, keeping n < rows replays them in place on S
//   (6.3 MB more): 12.6 MB at most, and no copy.
//   Eager: forward {state_in = S, state_out = null} reads 3.1 MB; commit replays the kept rows
//   {qkv = the forward's kept rows, rows = keep_rows = n, state_in = state_out = S, out = null},
//   3.1 MB read + 3.1 MB written: 9.4 MB, but every kept row replayed, a prompt's included.
//   Lazy: the next forward runs {qkv = [last window's n kept rows | new window], keep_rows = n,
//   state_in = state_out = S} and drops the first n outputs: 6.3 MB and no commit launch.
#ifndef TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_KEEP_CUH_
#define TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_KEEP_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/gated_delta_net.h"
#include "kernels/cuda/exl3_linear.cuh"  // cuda::Context, until the CUDA backend gives it a header.

namespace twinspan::cuda {

// One window of rows through the recurrence, on device pointers.
struct GatedDeltaNetWindow {
  const float* qkv = nullptr;   // [rows, qkv_width], the causal conv's output
  const float* g = nullptr;     // [rows, v_heads]
  const float* beta = nullptr;  // [rows, v_heads]
  int64_t rows = 0;
  const float* state_in = nullptr;  // [v_heads, k_dim, v_dim], the state before row 0
  int64_t keep_rows = 0;            // state_out gets the state after this many rows, 0..rows
  float* state_out = nullptr;       // Equal to state_in (in place) or disjoint; null: no state
  float* out = nullptr;             // [rows, v_heads, v_dim]; null computes no output (a replay)
};

// out as cpu::GatedDeltaNet over the window from state_in, and state_out = the state after
// keep_rows rows, asynchronous on ctx.stream. GatedDeltaNetKeep(rows = n, keep_rows = n,
// state_out = state_in) is GatedDeltaNet; every row gets the bits GatedDeltaNet gives it, so a
// replay of the kept rows leaves the state serial decoding leaves, bit for bit.
// REQUIRES: out overlaps neither state nor the inputs; pointers aligned as GatedDeltaNet's.
// InvalidArgument naming the argument for the dims GatedDeltaNet refuses, keep_rows outside
// [0, rows], state_out overlapping state_in without equalling it, or a null or misaligned pointer
// the window needs; Internal for a failed launch.
absl::Status GatedDeltaNetKeep(const Context& ctx, const GatedDeltaNetWindow& window,
                               const cpu::GatedDeltaNetDims& dims);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_KEEP_CUH_
