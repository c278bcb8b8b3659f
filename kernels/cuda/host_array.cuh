// Small host arrays (token ids, positions, per-row sampling parameters) travel to a kernel inside
// its launch parameters: no device copy, no synchronization, nothing to free. Launches take at most
// N entries each, so a parameter block stays well under the 4 KB every architecture accepts.
#ifndef TWINSPAN_KERNELS_CUDA_HOST_ARRAY_CUH_
#define TWINSPAN_KERNELS_CUDA_HOST_ARRAY_CUH_

#include <cstdint>

namespace twinspan::cuda {

template <typename T, int N>
struct HostArray {
  static constexpr int kCapacity = N;
  T v[N];
};

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_HOST_ARRAY_CUH_
