// Elementwise sum of two fp32 arrays: the residual add of every decoder layer.
#ifndef TWINSPAN_KERNELS_CPU_ADD_H_
#define TWINSPAN_KERNELS_CPU_ADD_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

// out[i] = a[i] + b[i] for i < n, one fp32 add each. out may alias a or b exactly.
// InvalidArgument for n < 0 or a null pointer with n > 0.
// Threads: indices are independent, spread over ctx.pool.
absl::Status Add(const Context& ctx, const float* a, const float* b, int64_t n, float* out);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_ADD_H_
