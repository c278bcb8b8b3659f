// The device layer of a build with the CUDA backend (kernels/cuda/cuda_backend.h).
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/cuda_backend.h"
#include "services/device/cuda_logits_sampler.h"
#include "services/device/device_backend.h"

namespace twinspan::device {

namespace {

// CUDA's own errors ("no CUDA-capable device") prefixed with the device the flag asked for.
template <typename T>
absl::StatusOr<T> Named(const DeviceSpec& device, absl::StatusOr<T> result) {
  if (result.ok()) return result;
  return absl::Status(result.status().code(),
                      absl::StrCat("device ", device.ToString(), ": ", result.status().message()));
}

}  // namespace

bool BuildHasCuda() { return true; }

absl::StatusOr<std::unique_ptr<backend::Backend>> OpenBackend(const DeviceSpec& device,
                                                              cpu::ThreadPool* pool) {
  if (!device.is_cuda()) return cpu::NewCpuBackend(pool);
  cuda::CudaBackendOptions options;
  options.device = device.ordinal;
  return Named(device, cuda::NewCudaBackend(options));
}

absl::StatusOr<std::unique_ptr<LogitsSampler>> OpenLogitsSampler(const DeviceSpec& device) {
  if (!device.is_cuda()) return std::unique_ptr<LogitsSampler>();
  absl::StatusOr<std::unique_ptr<CudaLogitsSampler>> sampler =
      Named(device, CudaLogitsSampler::Create(device.ordinal));
  if (!sampler.ok()) return sampler.status();
  return std::unique_ptr<LogitsSampler>(std::move(*sampler));
}

}  // namespace twinspan::device
