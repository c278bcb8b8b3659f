#include "services/drafter/drafter_scratch.h"

#include <algorithm>

#include "common/status.h"

namespace twinspan::drafter {

absl::StatusOr<DrafterScratch> DrafterScratch::Allocate(backend::Backend& b,
                                                        const DrafterConfig& c) {
  const int64_t r = kScratchRows, h = c.hidden_size, d = c.head_dim;
  DrafterScratch s;
  ABSL_ASSIGN_OR_RETURN(s.raw, b.AllocateFloats(r * c.num_taps() * h));
  ABSL_ASSIGN_OR_RETURN(s.fused, b.AllocateFloats(r * h));
  ABSL_ASSIGN_OR_RETURN(s.k, b.AllocateFloats(r * c.num_kv_heads * d));
  ABSL_ASSIGN_OR_RETURN(s.v, b.AllocateFloats(r * c.num_kv_heads * d));
  ABSL_ASSIGN_OR_RETURN(s.cos, b.AllocateFloats(r * d / 2));
  ABSL_ASSIGN_OR_RETURN(s.sin, b.AllocateFloats(r * d / 2));
  for (BufferPtr* p : {&s.state, &s.x, &s.y, &s.out, &s.hidden}) {
    ABSL_ASSIGN_OR_RETURN(*p, b.AllocateFloats(r * h));
  }
  ABSL_ASSIGN_OR_RETURN(s.q, b.AllocateFloats(r * c.num_heads * d));
  ABSL_ASSIGN_OR_RETURN(s.attn, b.AllocateFloats(r * c.num_heads * d));
  ABSL_ASSIGN_OR_RETURN(s.gate, b.AllocateFloats(r * c.intermediate_size));
  ABSL_ASSIGN_OR_RETURN(s.up, b.AllocateFloats(r * c.intermediate_size));
  // At least one float, so DFlash v1 (no convs) still has a valid buffer.
  ABSL_ASSIGN_OR_RETURN(s.dynamic, b.AllocateFloats(std::max<int64_t>(
                                       1, r * 2 * c.conv_kernel_size * c.conv_groups())));
  return s;
}

}  // namespace twinspan::drafter
