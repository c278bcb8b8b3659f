// SwiGLU activation of a gated MLP: out = silu(gate) * up, elementwise.
#ifndef TWINSPAN_KERNELS_CPU_SWIGLU_H_
#define TWINSPAN_KERNELS_CPU_SWIGLU_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

// For `rows` rows of `dim` values: out[r][i] = silu(gate[r][i]) * up[r][i] with
// silu(g) = g / (1 + exp(-g)). Row r of each array starts at base + r * its stride; out may alias
// gate or up exactly. A fused gate_up projection passes gate = gate_up, up = gate_up + dim, both
// with stride 2 * dim. InvalidArgument for dim <= 0, rows < 0 or a stride below dim.
absl::Status SwiGlu(const Context& ctx, const float* gate, const float* up, int64_t in_stride,
                    int64_t rows, int64_t dim, float* out, int64_t out_stride);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_SWIGLU_H_
