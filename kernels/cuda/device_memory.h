// One block of device memory from cudaMalloc, for data that lives as long as a model (weights,
// tables); per-forward scratch comes from the backend's stream-ordered pool instead.
#ifndef TWINSPAN_KERNELS_CUDA_DEVICE_MEMORY_H_
#define TWINSPAN_KERNELS_CUDA_DEVICE_MEMORY_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "absl/status/statusor.h"
#include "kernels/cuda/cuda_status.h"

namespace twinspan::cuda {

// Move-only; frees the block on the current device when destroyed. The device must be current
// when it is allocated and destroyed (the backend's device guard sees to that).
class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(DeviceMemory&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceMemory& operator=(DeviceMemory&& other) noexcept {
    std::swap(ptr_, other.ptr_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }

  // ResourceExhausted naming `bytes` and `what` when the device is out of memory.
  static absl::StatusOr<DeviceMemory> Allocate(size_t bytes, const char* what) {
    DeviceMemory m;
    if (bytes == 0) return m;
    const cudaError_t e = cudaMalloc(&m.ptr_, bytes);
    if (e != cudaSuccess) {
      m.ptr_ = nullptr;
      return AllocStatus(e, bytes, what);
    }
    m.bytes_ = bytes;
    return m;
  }

  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_DEVICE_MEMORY_H_
