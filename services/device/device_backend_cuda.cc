// The device layer of a build with the CUDA backend (kernels/cuda/cuda_backend.h).
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/cuda_backend.h"
#include "services/device/cuda_logits_sampler.h"
#include "services/device/device_backend.h"

namespace twinspan::device {

bool BuildHasCuda() { return true; }

absl::StatusOr<std::unique_ptr<backend::Backend>> OpenBackend(const DeviceSpec& device,
                                                              cpu::ThreadPool* pool) {
  if (!device.is_cuda()) return cpu::NewCpuBackend(pool);
  cuda::CudaBackendOptions options;
  options.device = device.ordinal;
  return cuda::NewCudaBackend(options);
}

absl::StatusOr<std::unique_ptr<LogitsSampler>> OpenLogitsSampler(const DeviceSpec& device) {
  if (!device.is_cuda()) return std::unique_ptr<LogitsSampler>();
  return CudaLogitsSampler::Create(device.ordinal);
}

}  // namespace twinspan::device
