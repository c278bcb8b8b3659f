// The residual add on the GPU, out = a + b elementwise: exact, so it equals the CPU backend's Add
// bit for bit.
#ifndef TWINSPAN_KERNELS_CUDA_ADD_CUH_
#define TWINSPAN_KERNELS_CUDA_ADD_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/context.cuh"

namespace twinspan::cuda {

// out[i] = a[i] + b[i] for i < n (device memory); out may alias a or b. InvalidArgument for n < 0
// or a null pointer. Asynchronous.
absl::Status Add(const Context& ctx, const float* a, const float* b, int64_t n, float* out);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_ADD_CUH_
