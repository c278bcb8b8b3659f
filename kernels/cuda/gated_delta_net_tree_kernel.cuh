// Device code of GatedDeltaNetTree: the register and column kernels over a tree window's rows in
// depth-first order (gated_delta_net_kernel.cuh, last paragraph), with the chain kernels' per-row
// step (gated_delta_net_step.cuh), so each row gets the bits of its path's chain.
#ifndef TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_TREE_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_TREE_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/gated_delta_net_step.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::gdn_kernel {

// The register kernel over a tree window's rows in schedule order (p.keep_rows, p.state_out
// unused): each step starts from the registers, the start state or its parent's saved state.
template <int kKDim>
__global__ void __launch_bounds__(kRegisterThreads)
    RegisterTreeKernel(RecurrentParams p, const __grid_constant__ TreeSchedule schedule) {
  StartDependent();
  constexpr int kSlice = kKDim / kParts;
  __shared__ __align__(16) ChunkInputs<kKDim> chunk;
  const int part = threadIdx.x & (kParts - 1);
  const int h = blockIdx.y;
  const int block_col = blockIdx.x * kBlockColumns;
  const int c0 = (threadIdx.x / kParts) * 4;
  const int j0 = block_col + c0;
  const bool active = j0 < p.v_dim;
  const int kh = h / (p.v_heads / p.k_heads);
  const int i0 = part * kSlice;
  const int64_t base = (static_cast<int64_t>(h) * kKDim + i0) * p.v_dim + j0;
  const int64_t state_size = static_cast<int64_t>(p.v_heads) * kKDim * p.v_dim;

  float s[kSlice][4];
  for (int64_t t0 = 0; t0 < p.rows; t0 += kRows) {
    const int n = p.rows - t0 < kRows ? static_cast<int>(p.rows - t0) : kRows;
    __syncthreads();
    StageChunk<kKDim>(p, t0, n, kh, h, block_col, chunk, TreeRows{&schedule});
    __syncthreads();
    for (int r = 0; r < n; ++r) {
      const int64_t t = t0 + r;
      const int load = schedule.load.v[t];
      if (load == kFromStart) {
        LoadState(p.state_in, base, p.v_dim, active, s);
      } else if (load >= 0) {
        LoadState(schedule.saved + load * state_size, base, p.v_dim, active, s);
      }
      StepRegisterRow<kKDim>(p, chunk, r, schedule.order.v[t], h, i0, c0, j0, active, part, s);
      const int save = schedule.save.v[t];
      if (save >= 0) StoreState(schedule.saved + save * state_size, base, p.v_dim, active, s);
    }
  }
}

// The column kernel over a tree window's rows in schedule order.
__global__ void __launch_bounds__(32)
    ColumnTreeKernel(RecurrentParams p, const __grid_constant__ TreeSchedule schedule) {
  StartDependent();
  extern __shared__ float tile[];  // [k_dim][32]
  const int lane = threadIdx.x;
  const int h = blockIdx.y;
  const int j = blockIdx.x * kBlockColumns + lane;
  const bool active = j < p.v_dim;
  const int kh = h / (p.v_heads / p.k_heads);
  const int64_t base = static_cast<int64_t>(h) * p.k_dim * p.v_dim + j;
  const int64_t state_size = static_cast<int64_t>(p.v_heads) * p.k_dim * p.v_dim;
  for (int64_t t = 0; t < p.rows; ++t) {
    const int load = schedule.load.v[t];
    if (load == kFromStart) {
      LoadColumn(p.state_in, base, p.k_dim, p.v_dim, active, lane, tile);
    } else if (load >= 0) {
      LoadColumn(schedule.saved + load * state_size, base, p.k_dim, p.v_dim, active, lane, tile);
    }
    StepColumnRow(p, tile, lane, h, kh, j, active, schedule.order.v[t]);
    const int save = schedule.save.v[t];
    if (save >= 0) {
      StoreColumn(schedule.saved + save * state_size, base, p.k_dim, p.v_dim, active, lane, tile);
    }
  }
}

}  // namespace twinspan::cuda::gdn_kernel

#endif  // TWINSPAN_KERNELS_CUDA_GATED_DELTA_NET_TREE_KERNEL_CUH_
