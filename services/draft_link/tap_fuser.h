// The target-side half of fused taps: loads only `fc` and `hidden_norm.weight` (and config.json)
// of a DFlash / DFlash2 drafter checkpoint, uploads them to the target's backend and applies them
// there with FuseTapRows (fuse_tap_rows.h), the function the drafter fuses its raw rows with. On
// the CPU backend the drafter's context is therefore bit for bit the one it would have built from
// raw rows; on a GPU the target fuses where its taps are and sends the fused rows (10 KB a row for
// the 27B instead of 51 KB raw bf16).
#ifndef TWINSPAN_SERVICES_DRAFT_LINK_TAP_FUSER_H_
#define TWINSPAN_SERVICES_DRAFT_LINK_TAP_FUSER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/safetensors/checkpoint.h"
#include "kernels/backend/backend.h"
#include "kernels/cpu/linear.h"
#include "services/draft_link/fuse_tap_rows.h"
#include "services/draft_link/tap_fusion.h"
#include "services/weights/drafter_linear.h"

namespace twinspan::engine {

// Immutable after Open. Every method issues ops on the backend, so it REQUIRES that nothing else
// issues ops on it meanwhile (the target's verifier calls it under its own lock); host Fuse calls
// are serialized among themselves.
class TapFuser : public TapFusion {
 public:
  // `backend` (not owned, must outlive the fuser) receives the two weights. `bits` must be what
  // the drafter loads its linears as (--drafter-bits), or fused rows differ from its own. Errors:
  // those of the drafter config loader and of the checkpoint (naming file and tensor: fc must be
  // [hidden, n_taps * hidden], hidden_norm.weight [hidden]), CheckpointFingerprint's, and the
  // backend's upload errors.
  static absl::StatusOr<std::unique_ptr<TapFuser>> Open(
      const std::string& drafter_dir, backend::Backend* backend,
      drafter::LinearBits bits = drafter::LinearBits::kAsStored);
  TapFuser(const TapFuser&) = delete;
  TapFuser& operator=(const TapFuser&) = delete;

  const std::string& drafter_fingerprint() const override { return fingerprint_; }
  const std::vector<int64_t>& target_layer_ids() const override { return layer_ids_; }
  int64_t raw_width() const override { return raw_width_; }
  int64_t fused_width() const override { return hidden_; }
  backend::Backend& backend() const { return *backend_; }

  // fused[rows, fused_width] = hidden_norm(fc(raw[rows, raw_width])), both in the backend's memory
  // (rows contiguous), issued on the backend. InvalidArgument for rows < 0; the ops' errors.
  absl::Status FuseOnBackend(const float* raw, int64_t rows, float* fused) const;
  // The same for host rows: uploaded, fused and downloaded in chunks (tests and tools).
  absl::Status Fuse(const float* raw, int64_t rows, float* fused) const override;

 private:
  TapFuser() = default;
  TapFusionWeights weights() const;

  backend::Backend* backend_ = nullptr;
  std::unique_ptr<const Checkpoint> checkpoint_;  // what a CPU backend's weights may point into
  cpu::LinearWeight fc_host_;
  std::unique_ptr<backend::LinearHandle> fc_;
  std::unique_ptr<backend::Buffer> hidden_norm_;
  float eps_ = 0;
  int64_t hidden_ = 0;
  int64_t raw_width_ = 0;
  std::vector<int64_t> layer_ids_;
  std::string fingerprint_;
  mutable absl::Mutex host_mu_;  // one host Fuse at a time: its staging buffers are per call
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_DRAFT_LINK_TAP_FUSER_H_
