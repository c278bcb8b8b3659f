// Raising a kernel's dynamic shared-memory limit once per (kernel, device) instead of on every
// launch: cudaFuncSetAttribute costs microseconds of host time, and a verify launches hundreds of
// kernels that need more than the default 48 KB.
#ifndef TWINSPAN_KERNELS_CUDA_SHARED_MEMORY_LIMIT_H_
#define TWINSPAN_KERNELS_CUDA_SHARED_MEMORY_LIMIT_H_

#include <cuda_runtime.h>

#include <atomic>
#include <mutex>

namespace twinspan::cuda {

inline constexpr int kMaxRememberedDevices = 64;

// Lets kKernel launch with `bytes` of dynamic shared memory on `device` (the current device).
// The limit only grows, to the largest size asked so far, so a smaller launch of the same kernel
// never lowers it under a larger one on another thread.
template <auto kKernel>
cudaError_t AllowSharedMemory(int device, int bytes) {
  static std::atomic<int> allowed[kMaxRememberedDevices] = {};
  static std::mutex raising;
  if (device < 0 || device >= kMaxRememberedDevices)
    return cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (allowed[device].load(std::memory_order_acquire) >= bytes) return cudaSuccess;
  const std::lock_guard<std::mutex> lock(raising);
  if (allowed[device].load(std::memory_order_relaxed) >= bytes) return cudaSuccess;
  const cudaError_t e =
      cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e == cudaSuccess) allowed[device].store(bytes, std::memory_order_release);
  return e;
}

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_SHARED_MEMORY_LIMIT_H_
