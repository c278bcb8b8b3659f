// engine::VerifierModel over a target::TargetModel: one SequenceState per stream.
#ifndef TWINSPAN_SERVICES_TARGET_SERVER_TARGET_VERIFIER_H_
#define TWINSPAN_SERVICES_TARGET_SERVER_TARGET_VERIFIER_H_

#include <memory>
#include <string>

#include "services/engine/verifier_model.h"
#include "services/target/target_model.h"

namespace twinspan::serving {

// Thread-safe as TargetModel is. `model` is not owned and must outlive this.
class TargetVerifier : public engine::VerifierModel {
 public:
  TargetVerifier(const target::TargetModel* model, engine::VerifierInfo info,
                 int64_t prefill_chunk_rows)
      : model_(model), info_(std::move(info)), prefill_chunk_rows_(prefill_chunk_rows) {}

  const engine::VerifierInfo& info() const override { return info_; }
  absl::StatusOr<std::unique_ptr<engine::VerifierSequence>> NewSequence() const override;
  // Every job that passes TargetModel::CheckForward runs in one TargetModel::ForwardBatch; a job
  // that fails it (or whose sequence this verifier did not make: InvalidArgument) fails alone.
  void VerifyBatch(absl::Span<engine::VerifyJob> jobs) const override;

 private:
  const target::TargetModel* model_;
  engine::VerifierInfo info_;
  int64_t prefill_chunk_rows_;
};

}  // namespace twinspan::serving

#endif  // TWINSPAN_SERVICES_TARGET_SERVER_TARGET_VERIFIER_H_
