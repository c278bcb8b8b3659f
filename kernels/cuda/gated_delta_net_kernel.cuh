// Device code of GatedDeltaNet / GatedDeltaNetKeep, the recurrent gated delta rule.
//
// Column j of a head's state S [k_dim, v_dim] evolves on its own: mem_j = sum_i S_ij k_i and
// out_j = sum_i S_ij q_i need only that column, k, q and v_j. So threads own state columns and
// keep them in registers for the whole window: the state is read once and written once a call.
//
// RegisterKernel (k_dim 64 or 128, v_dim % 4 == 0; all Qwen3.5 sizes): a half-warp owns 4 columns
// (one float4 a row of S), its 16 lanes split k_dim into 16 runs of k_dim / 16 rows; a block of 4
// warps owns 32 columns, the grid is (v_dim / 32, v_heads): 192 blocks and 24,576 threads of 32
// state floats each for the 27B. Sums over k_dim run in i order inside a lane, then a fixed
// butterfly over the 16 lanes; the l2 norms of q and k likewise. Bytes a call for the 27B: the
// state 3,145,728 read + 3,145,728 written, and per row qkv 40,960 + g, beta 384 + out 24,576;
// q and k, shared by 3 value heads and 4 column blocks, come from L2. Rows go in chunks of 16:
// the block first loads a chunk's inputs and norms its q and k rows (each half-warp two rows at
// once) into shared memory, so the serial chain of rows has no global load or norm in it.
//
// ColumnKernel (any other shape, k_dim <= 384): one thread a column, its column in shared memory
// ([k_dim][32] a warp), every sum in the CPU op's index order.
//
// Every rounding is explicit (__fmul_rn, __fadd_rn: no contraction), so a row's bits depend only
// on the state it starts from and its inputs, never on the window length or where the state
// lives: windows, single rows and replays agree bit for bit.
//
// Tree windows (RegisterTreeKernel, ColumnTreeKernel) walk the rows in depth-first order with the
// same per-row step (StepRegisterRow, StepColumnRow): a row whose parent was the step before
// continues from the registers; any other starts from the window's start state or from its
// parent's state, saved to TreeSchedule::saved after every row with more than one child. So each
// row steps its parent's state, as its path's chain does, and gets the chain's bits.
#ifndef TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/gated_delta_net_step.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::gdn_kernel {

template <int kKDim>
__global__ void __launch_bounds__(kRegisterThreads) RegisterKernel(RecurrentParams p) {
  StartDependent();
  constexpr int kSlice = kKDim / kParts;
  __shared__ __align__(16) ChunkInputs<kKDim> chunk;
  const int part = threadIdx.x & (kParts - 1);
  const int h = blockIdx.y;
  const int block_col = blockIdx.x * kBlockColumns;
  const int c0 = (threadIdx.x / kParts) * 4;  // The thread's first column in the block.
  const int j0 = block_col + c0;
  const bool active = j0 < p.v_dim;  // v_dim % 4 == 0: a float4 is wholly in or out.
  const int kh = h / (p.v_heads / p.k_heads);
  const int i0 = part * kSlice;
  const int64_t base = (static_cast<int64_t>(h) * kKDim + i0) * p.v_dim + j0;

  float s[kSlice][4];
  LoadState(p.state_in, base, p.v_dim, active, s);

  for (int64_t t0 = 0; t0 < p.rows; t0 += kRows) {
    const int n = p.rows - t0 < kRows ? static_cast<int>(p.rows - t0) : kRows;
    __syncthreads();  // The last chunk's readers are done.
    StageChunk<kKDim>(p, t0, n, kh, h, block_col, chunk);
    __syncthreads();
    for (int r = 0; r < n; ++r) {
      const int64_t t = t0 + r;
      if (t == p.keep_rows && p.state_out != nullptr)
        StoreState(p.state_out, base, p.v_dim, active, s);
      StepRegisterRow<kKDim>(p, chunk, r, t, h, i0, c0, j0, active, part, s);
    }
  }
  if (p.keep_rows == p.rows && p.state_out != nullptr) {
    StoreState(p.state_out, base, p.v_dim, active, s);
  }
}

// One warp a block, one thread a state column; the column lives in shared memory.
__global__ void __launch_bounds__(32) ColumnKernel(RecurrentParams p) {
  StartDependent();
  extern __shared__ float tile[];  // [k_dim][32]
  const int lane = threadIdx.x;
  const int h = blockIdx.y;
  const int j = blockIdx.x * kBlockColumns + lane;
  const bool active = j < p.v_dim;
  const int kh = h / (p.v_heads / p.k_heads);
  const int64_t base = static_cast<int64_t>(h) * p.k_dim * p.v_dim + j;
  LoadColumn(p.state_in, base, p.k_dim, p.v_dim, active, lane, tile);
  for (int64_t t = 0; t < p.rows; ++t) {
    if (t == p.keep_rows && p.state_out != nullptr) {
      StoreColumn(p.state_out, base, p.k_dim, p.v_dim, active, lane, tile);
    }
    StepColumnRow(p, tile, lane, h, kh, j, active, t);
  }
  if (p.keep_rows == p.rows && p.state_out != nullptr) {
    StoreColumn(p.state_out, base, p.k_dim, p.v_dim, active, lane, tile);
  }
}

}  // namespace twinspan::cuda::gdn_kernel

#endif  // TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_KERNEL_CUH_
