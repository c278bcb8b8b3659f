#include "services/target/mlp_block.h"

#include "common/status.h"

namespace twinspan::target {

absl::StatusOr<MlpBlockHandles> UploadMlpBlock(backend::Backend& backend,
                                               const MlpBlockWeights& w) {
  MlpBlockHandles h;
  ABSL_ASSIGN_OR_RETURN(h.gate_proj, backend.UploadLinear(w.gate_proj));
  ABSL_ASSIGN_OR_RETURN(h.up_proj, backend.UploadLinear(w.up_proj));
  ABSL_ASSIGN_OR_RETURN(h.down_proj, backend.UploadLinear(w.down_proj));
  return h;
}

absl::Status MlpBlockForward(backend::Backend& be, const MlpBlockHandles& w, const float* x,
                             int64_t rows, float* out) {
  const int64_t inter = w.gate_proj->out_features();
  const int64_t hidden = w.gate_proj->in_features();
  ABSL_ASSIGN_OR_RETURN(auto gate_up, be.AllocateFloats(rows * 2 * inter));  // [rows, (gate | up)]
  float* gate = gate_up->floats();
  float* up = gate + inter;
  const backend::LinearOutput gate_up_outs[] = {{w.gate_proj.get(), gate, 2 * inter},
                                                {w.up_proj.get(), up, 2 * inter}};
  ABSL_RETURN_IF_ERROR(be.Linears(x, hidden, rows, gate_up_outs));
  ABSL_RETURN_IF_ERROR(be.SwiGlu(gate, up, 2 * inter, rows, inter, gate, 2 * inter));
  return be.Linear(gate, 2 * inter, rows, *w.down_proj, out, hidden);
}

}  // namespace twinspan::target
