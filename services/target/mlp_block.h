// The SwiGLU MLP sublayer shared by the families: down(silu(gate(x)) * up(x)).
#ifndef TWINSPAN_SERVICES_TARGET_MLP_BLOCK_H_
#define TWINSPAN_SERVICES_TARGET_MLP_BLOCK_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/linear.h"

namespace twinspan::target {

struct MlpBlockWeights {
  cpu::LinearWeight gate_proj;  // [intermediate, hidden]
  cpu::LinearWeight up_proj;    // [intermediate, hidden]
  cpu::LinearWeight down_proj;  // [hidden, intermediate]
};

// out[rows, hidden] = MLP of the normed input x[rows, hidden]. Errors from the ops.
absl::Status MlpBlockForward(const cpu::Context& ctx, const MlpBlockWeights& weights,
                             const float* x, int64_t rows, float* out);

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_MLP_BLOCK_H_
