// RMS norm gated by SiLU: the output norm of a Gated DeltaNet layer (HF Qwen3NextRMSNormGated).
#ifndef TWINSPAN_KERNELS_CPU_GATED_RMS_NORM_H_
#define TWINSPAN_KERNELS_CPU_GATED_RMS_NORM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

// For each of `groups` vectors of `dim` values:
//   y = weight * (x * rsqrt(mean(x^2) + eps)) * silu(gate)
// weight is used as stored (not 1 + w: this norm is not zero-centred).
// x, gate, y: [groups, dim] packed; weight: [dim]. y may equal x.
// InvalidArgument for groups < 0, dim <= 0 or eps < 0.
// Threads: groups are independent, spread over ctx.pool; each sum runs in index order.
absl::Status GatedRmsNorm(const Context& ctx, const float* x, const float* gate, int64_t groups,
                          int64_t dim, const float* weight, float eps, float* y);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_GATED_RMS_NORM_H_
