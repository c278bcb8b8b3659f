// What a target needs to send fused tap rows: the drafter's fc + hidden_norm applied on the
// target's side of the split (DESIGN.md "Bytes per round": 5x fewer bytes for five taps).
// TapFuser (tap_fuser.h) implements it from the drafter checkpoint.
#ifndef TWINSPAN_SERVICES_DRAFT_LINK_TAP_FUSION_H_
#define TWINSPAN_SERVICES_DRAFT_LINK_TAP_FUSION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace twinspan::engine {

// Immutable and thread-safe.
class TapFusion {
 public:
  virtual ~TapFusion() = default;
  // Identity of the drafter checkpoint whose fc + hidden_norm this applies; the drafter refuses a
  // target whose fusion came from another checkpoint.
  virtual const std::string& drafter_fingerprint() const = 0;
  virtual const std::vector<int64_t>& target_layer_ids() const = 0;
  virtual int64_t raw_width() const = 0;    // floats in: n_taps * target hidden
  virtual int64_t fused_width() const = 0;  // floats out: the drafter's hidden
  // fused[rows, fused_width] = hidden_norm(fc(raw[rows, raw_width])). InvalidArgument for rows < 0.
  virtual absl::Status Fuse(const float* raw, int64_t rows, float* fused) const = 0;
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_DRAFT_LINK_TAP_FUSION_H_
