// engine::VerifierModel over a target::TargetModel: one SequenceState per stream. Tap rows stay in
// the model's backend until the engine reads the kept prefix (ReadTaps), fused there first when a
// TapFuser is given; with a LogitsSampler every row is drawn where the logits are and only the
// ids leave the device (a GPU), otherwise the logits are downloaded and the engine samples them.
#ifndef TWINSPAN_SERVICES_TARGET_SERVER_TARGET_VERIFIER_H_
#define TWINSPAN_SERVICES_TARGET_SERVER_TARGET_VERIFIER_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "services/device/logits_sampler.h"
#include "services/draft_link/tap_fuser.h"
#include "services/target/engine/verifier_model.h"
#include "services/target/target_model.h"

namespace twinspan::serving {

struct TargetVerifierOptions {
  int64_t prefill_chunk_rows = 256;
  // Draws every row on the model's device (WindowOutput::tokens); null leaves the sampling to the
  // engine (logits downloaded: the CPU backend's path). Not owned; must read the model's backend.
  device::LogitsSampler* sampler = nullptr;
  // Fuses tap rows on the model's backend before they leave it (WindowOutput::taps_fused); the
  // streams must then ask for its target_layer_ids. Null: raw rows. Not owned; on the model's
  // backend.
  const engine::TapFuser* fuser = nullptr;
  // Prompts resume after their longest cached prefix and leave their blocks in it. Not owned; of
  // `model`; used only under the verifier's lock. Null: every prompt prefills from its start.
  target::PrefixCache* prefix_cache = nullptr;
};

// Thread-safe: calls run one at a time under the verifier's lock, which also covers its own use of
// the backend (sampling, fusing, tap reads). `model` and the options' pointers are not owned and
// must outlive this; nothing but this verifier may use the model while it exists.
class TargetVerifier : public engine::VerifierModel {
 public:
  TargetVerifier(const target::TargetModel* model, engine::VerifierInfo info,
                 const TargetVerifierOptions& options);
  TargetVerifier(const target::TargetModel* model, engine::VerifierInfo info,
                 int64_t prefill_chunk_rows)
      : TargetVerifier(model, std::move(info), TargetVerifierOptions{prefill_chunk_rows}) {}

  const engine::VerifierInfo& info() const override { return info_; }
  absl::StatusOr<std::unique_ptr<engine::VerifierSequence>> NewSequence() const override;
  engine::PrefixCacheUse prefix_cache_use() const override;
  void GaveDrafterPrefix(absl::Span<const uint32_t> prompt, uint64_t drafter_epoch) const override;
  void ForgetDrafterPrefix(absl::Span<const uint32_t> prompt) const override;
  // Every job that passes TargetModel::CheckForward (and, when sampled, SamplingParams::Validate)
  // runs in one TargetModel::ForwardBatch and, with a sampler, one Sample over all their rows; a
  // job that fails its checks (or whose sequence this verifier did not make: InvalidArgument)
  // fails alone, as does one whose logits hold a NaN.
  void VerifyBatch(absl::Span<engine::VerifyJob> jobs) const override;

  class Sequence;

 private:
  void VerifyBatchLocked(absl::Span<engine::VerifyJob> jobs) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const target::TargetModel* model_;
  const engine::VerifierInfo info_;
  const TargetVerifierOptions options_;
  mutable absl::Mutex mu_;
};

}  // namespace twinspan::serving

#endif  // TWINSPAN_SERVICES_TARGET_SERVER_TARGET_VERIFIER_H_
