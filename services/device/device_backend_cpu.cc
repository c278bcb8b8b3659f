// The device layer of a build without CUDA: only the CPU.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_backend.h"
#include "services/device/device_backend.h"

namespace twinspan::device {

bool BuildHasCuda() { return false; }

absl::StatusOr<std::unique_ptr<backend::Backend>> OpenBackend(const DeviceSpec& device,
                                                              cpu::ThreadPool* pool) {
  if (device.is_cuda()) {
    return absl::InvalidArgumentError(
        absl::StrCat(device.ToString(), ": this build has no CUDA backend"));
  }
  return cpu::NewCpuBackend(pool);
}

absl::StatusOr<std::unique_ptr<LogitsSampler>> OpenLogitsSampler(const DeviceSpec& device) {
  if (device.is_cuda()) {
    return absl::InvalidArgumentError(
        absl::StrCat(device.ToString(), ": this build has no CUDA backend"));
  }
  return std::unique_ptr<LogitsSampler>();
}

}  // namespace twinspan::device
