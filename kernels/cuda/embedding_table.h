// An embedding table on the device in its checkpoint dtype (host code: it reads cpu tables).
#ifndef TWINSPAN_KERNELS_CUDA_EMBEDDING_TABLE_H_
#define TWINSPAN_KERNELS_CUDA_EMBEDDING_TABLE_H_

#include "absl/status/statusor.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/embedding.cuh"

namespace twinspan::cuda {

// Owns the device copy; move-only. Safe to share read-only between ops once uploaded.
class DeviceEmbeddingTable {
 public:
  // Copies `table` to the current device synchronously, keeping its dtype (the fp32 rows the CPU
  // table gives back narrow to bf16 / f16 exactly). InvalidArgument for an empty table,
  // ResourceExhausted naming the bytes, Internal when a copy fails.
  static absl::StatusOr<DeviceEmbeddingTable> Upload(const cpu::EmbeddingTable& table);

  const EmbeddingView& view() const { return view_; }

 private:
  DeviceMemory memory_;
  EmbeddingView view_;
};

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_EMBEDDING_TABLE_H_
