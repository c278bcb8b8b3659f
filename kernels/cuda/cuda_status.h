// CUDA runtime errors as absl::Status, for .cu and .cc files alike: out-of-memory is
// ResourceExhausted, anything else Internal, each naming the call and CUDA's error string.
#ifndef TWINSPAN_KERNELS_CUDA_CUDA_STATUS_H_
#define TWINSPAN_KERNELS_CUDA_CUDA_STATUS_H_

#include <cuda_runtime.h>

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace twinspan::cuda {

// OkStatus for cudaSuccess; `what` names the call ("RmsNorm launch", "cudaMemcpyAsync").
inline absl::Status CudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  if (e == cudaErrorMemoryAllocation) {
    return absl::ResourceExhaustedError(absl::StrFormat("%s: %s", what, cudaGetErrorString(e)));
  }
  return absl::InternalError(absl::StrFormat("%s: %s", what, cudaGetErrorString(e)));
}

// An allocation's status; out-of-memory names the bytes asked for.
inline absl::Status AllocStatus(cudaError_t e, size_t bytes, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // Not sticky: clear it so later calls report their own errors.
    return absl::ResourceExhaustedError(
        absl::StrFormat("%s: cannot allocate %d bytes of device memory", what, bytes));
  }
  return CudaStatus(e, what);
}

// The status of the kernel launch just made on this thread (bad configurations show here; faults
// inside the kernel show at the next synchronizing call).
inline absl::Status LaunchStatus(const char* kernel) {
  return CudaStatus(cudaGetLastError(), kernel);
}

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_CUDA_STATUS_H_
