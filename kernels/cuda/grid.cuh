// Grid sizes for grid-stride elementwise kernels: enough blocks to fill any GPU we build for
// (132 SMs x 16 blocks on an H200), never more than the work needs.
#ifndef TWINSPAN_KERNELS_CUDA_GRID_CUH_
#define TWINSPAN_KERNELS_CUDA_GRID_CUH_

#include <algorithm>
#include <cstdint>

namespace twinspan::cuda {

inline unsigned GridStrideBlocks(int64_t items, int threads) {
  constexpr int64_t kMaxBlocks = 4096;
  return static_cast<unsigned>(std::clamp<int64_t>((items + threads - 1) / threads, 1, kMaxBlocks));
}

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_GRID_CUH_
