// EXL3 linear on the GPU: y = x @ W for an EXL3-quantized weight, 1..64 rows per launch (decode and
// verify windows); more rows run as consecutive 64-row launches. Twin of kernels/cpu/exl3_linear.h.
//
// Row-invariant: the reduction order depends on (k, n, plan) only, so every row gets the bits it
// gets when it runs alone. A column view (exl3 Weight::columns) gives bit for bit the parent's
// columns when it carries the parent's plan and tile row stride.
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
  const uint16_t* trellis =
      nullptr;                   // Tile (0, first column tile of the view), [k/16][*][16*bits].
  int64_t tile_row_stride = 0;   // uint16 elements between k-tile rows: parent n/16 * 16 * bits.
  const __half* suh = nullptr;   // [k]
  const __half* svh = nullptr;   // [n] of the view.
  const __half* bias = nullptr;  // [n] of the view, or nullptr.
  int64_t k = 0;                 // in_features, a multiple of 128.
  int64_t n = 0;                 // out_features of the view, a multiple of 128.
  int bits = 0;                  // K, 1..8.
  Exl3Codebook codebook = Exl3Codebook::kMul1;
  int k_splits = 0;  // From exl3 plan(k, parent n): K splits ...
  int warps = 0;     // ... and warps per split (1..8). Never derived here.
};

// Stream and scratch of a launch. The workspace must be zeroed once when allocated (its counters);
// every launch leaves them zero again. One workspace serves one stream at a time.
struct Context {
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// Bytes of workspace Exl3Linear needs for `w` at up to `rows` rows.
size_t Exl3LinearWorkspaceBytes(const Exl3DeviceWeight& w, int64_t rows);

// y[rows, n] = x[rows, k] @ W, x and y device fp32, row strides x_stride and y_stride in floats.
// Same arithmetic as cpu::Exl3Linear except the order of the fp32 sums inside a group of k-tiles
// (xh is bit-identical; products of fp16 values are exact). Asynchronous on
// ctx.stream. InvalidArgument naming the bad field for shapes, plan or strides that do not fit
// or x, y or the trellis not 16-byte aligned,
// ResourceExhausted for a small workspace, Internal for a failed launch.
absl::Status Exl3Linear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                        const Exl3DeviceWeight& w, float* y, int64_t y_stride);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_CUH_
