// Device code of TopK: one 512-thread block per row runs the radix select of select_kernel.cuh on
// (value, column) keys, gathers the k winners into shared memory, sorts them and writes them out.
// A row costs a NaN pass, 3-8 histogram passes (8 bits of key each; it stops once the boundary
// bin holds exactly the keys still wanted) and a gather pass over its columns.
#ifndef TWINSPAN_KERNELS_CUDA_TOPK_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_TOPK_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/reduce.cuh"
#include "kernels/cuda/select_kernel.cuh"

namespace twinspan::cuda::topk_kernel {

constexpr int kThreads = 512;
constexpr int kMaxK = 4096;

struct Params {
  const float* logits = nullptr;
  int64_t stride = 0;
  int64_t cols = 0;
  int k = 0;
  float* values = nullptr;
  int32_t* indices = nullptr;
};

__global__ void __launch_bounds__(kThreads) TopKKernel(const Params p) {
  namespace sk = select_kernel;
  __shared__ sk::SelectShared s;
  __shared__ uint64_t keys[kMaxK];
  const float* row = p.logits + static_cast<int64_t>(blockIdx.x) * p.stride;
  float* values = p.values + static_cast<int64_t>(blockIdx.x) * p.k;
  int32_t* indices = p.indices + static_cast<int64_t>(blockIdx.x) * p.k;
  bool nan = false;
  for (int64_t i = threadIdx.x; i < p.cols; i += kThreads) nan |= isnan(row[i]);
  if (__syncthreads_or(nan)) {
    for (int j = threadIdx.x; j < p.k; j += kThreads) {
      values[j] = QuietNaN();
      indices[j] = -1;
    }
    return;
  }
  const auto key = [&](int64_t i) { return sk::RankKey(row[i], i); };
  const uint64_t threshold = sk::SelectThreshold<kThreads>(p.cols, key, p.k, s);
  const unsigned count = sk::Gather<kThreads>(p.cols, key, threshold, keys, s);
  sk::SortDescending<kThreads>(keys, count);
  for (int j = threadIdx.x; j < p.k; j += kThreads) {
    const int64_t column = sk::KeyColumn(keys[j]);
    values[j] = row[column];
    indices[j] = static_cast<int32_t>(column);
  }
}

}  // namespace twinspan::cuda::topk_kernel

#endif  // TWINSPAN_KERNELS_CUDA_TOPK_KERNEL_CUH_
