#include "kernels/cuda/device_count.h"

#include <cuda_runtime.h>

#include "absl/strings/str_format.h"
#include "kernels/cuda/cuda_status.h"

namespace twinspan::cuda {

absl::StatusOr<int> VisibleDeviceCount() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaSuccess) return count;
  cudaGetLastError();  // Not sticky: clear it so later calls report their own errors.
  if (e == cudaErrorNoDevice) return 0;
  if (e == cudaErrorInsufficientDriver) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "no usable NVIDIA driver: libcuda.so.1 is missing or older than the CUDA %d.%d runtime "
        "this build carries (cudaGetDeviceCount: %s); in a container, start it through the NVIDIA "
        "container toolkit (podman --device nvidia.com/gpu=N, Kubernetes runtimeClassName nvidia)",
        CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10, cudaGetErrorString(e)));
  }
  return CudaStatus(e, "cudaGetDeviceCount");
}

}  // namespace twinspan::cuda
