// The target-side half of fused taps: loads only `fc.weight` and `hidden_norm.weight` (and
// config.json) of a DFlash / DFlash2 drafter checkpoint and applies them with the same CPU ops, in
// the same order, as drafter::DrafterModel::FuseTaps, so the drafter's context is bit for bit the
// one it would have built from raw rows.
#ifndef TWINSPAN_SERVICES_ENGINE_TAP_FUSER_H_
#define TWINSPAN_SERVICES_ENGINE_TAP_FUSER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/linear.h"
#include "services/engine/tap_fusion.h"

namespace twinspan::engine {

class TapFuser : public TapFusion {
 public:
  // `pool` (may be null) runs the ops and must outlive the fuser. Errors: those of the drafter
  // config loader and of the checkpoint (naming file and tensor: fc.weight must be
  // [hidden, n_taps * hidden], hidden_norm.weight [hidden]), and of CheckpointFingerprint.
  static absl::StatusOr<std::unique_ptr<TapFuser>> Open(const std::string& drafter_dir,
                                                        cpu::ThreadPool* pool);
  TapFuser(const TapFuser&) = delete;
  TapFuser& operator=(const TapFuser&) = delete;

  const std::string& drafter_fingerprint() const override { return fingerprint_; }
  const std::vector<int64_t>& target_layer_ids() const override { return layer_ids_; }
  int64_t raw_width() const override { return raw_width_; }
  int64_t fused_width() const override { return hidden_; }
  absl::Status Fuse(const float* raw, int64_t rows, float* fused) const override;

 private:
  TapFuser() = default;
  cpu::Context ctx_;
  cpu::LinearWeight fc_;
  std::vector<float> hidden_norm_;
  float eps_ = 0;
  int64_t hidden_ = 0;
  int64_t raw_width_ = 0;
  std::vector<int64_t> layer_ids_;
  std::string fingerprint_;
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_ENGINE_TAP_FUSER_H_
