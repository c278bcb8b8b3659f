// How many CUDA devices this process sees, with a missing or too-old NVIDIA driver reported as
// such: cudart is linked statically, so a host or container without the driver's libcuda.so.1
// gets "driver version is insufficient" from CUDA, which names neither the file nor the fix.
#ifndef TWINSPAN_KERNELS_CUDA_DEVICE_COUNT_H_
#define TWINSPAN_KERNELS_CUDA_DEVICE_COUNT_H_

#include "absl/status/statusor.h"

namespace twinspan::cuda {

// The devices cudaGetDeviceCount lists (0 when the driver finds none). FailedPrecondition naming
// libcuda.so.1, the runtime's CUDA version and the NVIDIA container toolkit when no usable
// driver is loaded; Internal for any other CUDA error.
absl::StatusOr<int> VisibleDeviceCount();

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_DEVICE_COUNT_H_
