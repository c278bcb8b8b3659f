// The launch of SelectorWalk's kernel, callable from C++20 host code (candidate_selector.cc) and
// defined in candidate_selector.cu. Internal to the CUDA backend.
#ifndef TWINSPAN_KERNELS_CUDA_CANDIDATE_SELECTOR_LAUNCH_H_
#define TWINSPAN_KERNELS_CUDA_CANDIDATE_SELECTOR_LAUNCH_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace twinspan::cuda::selector_kernel {

constexpr int kThreads = 256;  // Also the most candidates a slot may have.
constexpr int kMaxSlots = 64;
constexpr size_t kMaxSharedBytes = 48 * 1024;

// Shared memory of one walk: the gated predecessor row, top_k padded successor rows, the slot's
// scores, the uniforms and two ints.
inline size_t SharedBytes(int64_t top_k, int64_t rank) {
  return sizeof(float) * static_cast<size_t>(rank + top_k * (rank + 1) + top_k + kMaxSlots + 2);
}

// Validated arguments of one walk; see cpu::SelectorWalkInputs / Outputs / Params.
struct Args {
  const int32_t* candidate_ids;    // [slots, top_k]
  const float* unary;              // [slots, top_k]
  const float* hidden_projection;  // [slots, rank]
  const void* predecessor;         // [vocab, rank], bf16 or f32
  const void* successor;
  bool predecessor_bf16, successor_bf16;
  int64_t vocab;
  int slots, top_k, rank;
  int32_t anchor_id;
  float temperature;
  float uniforms[kMaxSlots];
  int32_t* proposals;    // [slots]
  float* scores;         // [slots, top_k]
  float* probabilities;  // [slots, top_k] when temperature > 0
};

// Enqueues the walk on `stream`; returns the launch's error.
cudaError_t LaunchSelectorWalk(const Args& args, cudaStream_t stream);

// Enqueues the score table (SelectorScoreTable) of args' slots into `table`; uniforms,
// temperature and the walk's outputs are unused.
cudaError_t LaunchSelectorScoreTable(const Args& args, float* table, cudaStream_t stream);

}  // namespace twinspan::cuda::selector_kernel

#endif  // TWINSPAN_KERNELS_CUDA_CANDIDATE_SELECTOR_LAUNCH_H_
