#include "services/target/mlp_block.h"

#include <vector>

#include "common/status.h"
#include "kernels/cpu/swiglu.h"

namespace twinspan::target {

absl::Status MlpBlockForward(const cpu::Context& ctx, const MlpBlockWeights& weights,
                             const float* x, int64_t rows, float* out) {
  const int64_t inter = weights.gate_proj.out_features();
  const int64_t hidden = weights.gate_proj.in_features();
  std::vector<float> gate_up(rows * 2 * inter);  // Row r: [gate (inter), up (inter)].
  ABSL_RETURN_IF_ERROR(
      cpu::Linear(ctx, x, hidden, rows, weights.gate_proj, gate_up.data(), 2 * inter));
  ABSL_RETURN_IF_ERROR(
      cpu::Linear(ctx, x, hidden, rows, weights.up_proj, gate_up.data() + inter, 2 * inter));
  ABSL_RETURN_IF_ERROR(cpu::SwiGlu(ctx, gate_up.data(), gate_up.data() + inter, 2 * inter, rows,
                                   inter, gate_up.data(), 2 * inter));
  return cpu::Linear(ctx, gate_up.data(), 2 * inter, rows, weights.down_proj, out, hidden);
}

}  // namespace twinspan::target
