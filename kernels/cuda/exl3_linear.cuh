// EXL3 linear on the GPU: y = x @ W for an EXL3-quantized weight, 1..64 rows per launch (decode and
// verify windows); more rows (prompts, many streams' windows) take the prompt path, which decodes
// each weight tile once per 64 rows for the tensor cores. Twin of kernels/cpu/exl3_linear.h.
//
// Row-invariant: the reduction order depends on (k, plan) only, so every row gets the bits it gets
// when it runs alone, and a column view (exl3 Weight::columns) gives bit for bit the parent's
// columns when it carries the parent's plan.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_CUH_

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

namespace twinspan::cuda {

// Trellis codebooks, in the order of exl3's Codebook.
enum class Exl3Codebook : int { k3inst = 0, kMcg = 1, kMul1 = 2 };

// A device-resident EXL3 weight or a view of whole 128-column blocks of one. Non-owning.
struct Exl3DeviceWeight {
  const uint32_t* trellis = nullptr;  // The view's first 128-column block, in the device layout
                                      // of kernels/cuda/exl3_layout.h (16-byte aligned).
  const __half* suh = nullptr;        // [k]
  const __half* svh = nullptr;        // [n] of the view.
  const __half* bias = nullptr;       // [n] of the view, or nullptr.
  int64_t k = 0;                      // in_features, a multiple of 128.
  int64_t n = 0;                      // out_features of the view, a multiple of 128.
  int bits = 0;                       // K, 1..8.
  Exl3Codebook codebook = Exl3Codebook::kMul1;
  int k_splits = 0;  // From exl3 plan(k, parent n): K splits ...
  int warps = 0;     // ... and warps per split (1..8). Never derived here.
};

// Stream and scratch of a launch. The workspace must be zeroed once when allocated (its counters,
// at a fixed place for every shape); every launch leaves them zero again. One workspace serves
// launches of any shapes on one stream at a time.
struct Context {
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  // Tests and tuning only; none changes a bit of the output. Schedule: 0 picks per launch,
  // 1 forces warp units, 2 forces rounds (4-tile items, up to 16 rows); on the prompt path 1 cuts
  // every tile's k into plan groups, 2 never cuts it. Blocks per SM: 0 or 1 one
  // block with all the SM's warps, 2 two blocks of half as many. L2 prefetch: 0 automatic, -1
  // off, else half-strips ahead. Rotation kernel: 0 only where shared memory is short, 1 always
  // above 16 rows. Warps: 0 as many as the kernel holds, else at most this many per block. Item
  // tiles: 4 or 2 tiles per warp work item where the rows allow (4 up to 16, 2 from 9), else auto.
  int exl3_schedule = 0;
  int exl3_blocks_per_sm = 0;
  int exl3_l2_ahead = 0;
  int exl3_rotation_kernel = 0;
  int exl3_warps = 0;
  int exl3_item_tiles = 0;
  // 1: Exl3Linears launches each weight on its own (the A/B of one launch for all).
  int exl3_separate = 0;
  // Rows from which a call takes the prompt path (each weight tile decoded once per 64 rows and
  // multiplied with all of them): 0 from kExl3PromptRows, -1 never (64-row launches), else this
  // many. Same bits either way.
  int exl3_prompt_rows = 0;
  // Rows a block of the prompt path owns: 0 picks (256, wgmma, from kExl3WidePromptRows rows on an
  // sm_90 GPU with the sm_90a build; else 64, mma.sync), 64 or 256 forces. Same bits either way.
  int exl3_prompt_tile = 0;
  // Q4Linear's output columns per warp: 0 picks by shape, else 1, 2 or 4 (same bits).
  int q4_columns = 0;
};

// Rows from which Exl3Linear takes the prompt path by default: on the H200 it overtakes 64-row
// launches between 65 rows (50.6 against ~44 ms for the 27B's body) and 128 (54.0 against 71.0).
inline constexpr int64_t kExl3PromptRows = 96;

// Rows from which the prompt path gives each block 256 rows (each weight tile decoded once for
// all of them, wgmma) instead of 64: on the H100 the wgmma tiles are 4% slower at 256 rows, 7%
// faster at 512 and 23% at 4,096 (docs/perf.md).
inline constexpr int64_t kExl3WidePromptRows = 512;

// y[rows, n] = x[rows, k] @ W, x and y device fp32, row strides x_stride and y_stride in floats.
// Same arithmetic as cpu::Exl3Linear except the order of the fp32 sums inside a group of k-tiles
// (xh is bit-identical; products of fp16 values are exact). Asynchronous on ctx.stream; uses
// programmatic dependent launch, so it may start streaming W while the previous kernel on the
// stream finishes (it reads x only after). InvalidArgument naming the bad field for shapes, plan
// or strides that do not fit or x, y or the trellis not 16-byte aligned, ResourceExhausted for a
// small workspace or a plan whose groups exceed shared memory, Internal for a failed launch.
absl::Status Exl3Linear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                        const Exl3DeviceWeight& w, float* y, int64_t y_stride);

// One weight of Exl3Linears and where its rows go.
struct Exl3LinearOutput {
  const Exl3DeviceWeight* w = nullptr;
  float* y = nullptr;
  int64_t y_stride = 0;
};
inline constexpr int kMaxExl3Linears = 3;

// Bytes of workspace Exl3Linears (and Exl3Linear, as one weight) needs for these weights at up to
// `rows` rows (0 for weights it refuses).
size_t Exl3LinearsWorkspaceBytes(const Exl3LinearOutput* outs, int count, int64_t rows);

// y_i = x @ W_i for 1..kMaxExl3Linears weights of one k, K and codebook (each with its own plan):
// the weights of one input (gate and up, q, k and v) in one launch per 64 rows, the SMs shared in
// proportion to their columns, so one launch's ramp and tail serve all; one launch each where
// their schedules do not fit side by side. Each y_i gets the bits Exl3Linear gives it. Errors as
// Exl3Linear's, naming the weight; InvalidArgument for weights of different k, K or codebook.
absl::Status Exl3Linears(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                         const Exl3LinearOutput* outs, int count);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_CUH_
