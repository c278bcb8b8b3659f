// Small deterministic stand-ins for the target, drafter and sampler, used to test the engine's
// exactness logic without model weights. They are test doubles, never served: a row's logits are a
// hash of the tokens before it, so verify windows equal single steps by construction.
#ifndef TWINSPAN_TESTS_INTEGRATION_TOY_MODELS_H_
#define TWINSPAN_TESTS_INTEGRATION_TOY_MODELS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "services/engine/draft_model.h"
#include "services/engine/verifier_model.h"

namespace twinspan::testing {

// How an engine called a ToyVerifier. Thread-safe.
class ToyVerifyLog {
 public:
  int NewSequenceId();
  void RecordBatch(std::vector<int> sequence_ids);
  void RecordVerify();
  // The sequences (by creation order, from 0) of each VerifyBatch call, in call order.
  std::vector<std::vector<int>> batches() const;
  // Every Verify a sequence ran, inside a VerifyBatch or not.
  int64_t verifies() const;

 private:
  mutable absl::Mutex mu_;
  int next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::vector<int>> batches_ ABSL_GUARDED_BY(mu_);
  int64_t verifies_ ABSL_GUARDED_BY(mu_) = 0;
};

// Logits over `vocab` ids from the hash of a token prefix; eos_id ends streams sometimes.
// VerifyBatch is the default loop, logged.
class ToyVerifier : public engine::VerifierModel {
 public:
  ToyVerifier(int vocab, int64_t context, uint32_t eos_id, int hidden_size = 4);
  const engine::VerifierInfo& info() const override { return info_; }
  absl::StatusOr<std::unique_ptr<engine::VerifierSequence>> NewSequence() const override;
  void VerifyBatch(absl::Span<engine::VerifyJob> jobs) const override;
  const ToyVerifyLog& log() const { return *log_; }

 private:
  engine::VerifierInfo info_;
  std::unique_ptr<ToyVerifyLog> log_ = std::make_unique<ToyVerifyLog>();
};

// Proposes the toy target's greedy continuation, except that every `miss_every`-th proposal is
// replaced by a wrong id, so acceptance is partial.
class ToyDrafter : public engine::DraftModel {
 public:
  ToyDrafter(int vocab, int block_size, int miss_every, int tap_width);
  const engine::DrafterInfo& info() const override { return info_; }
  absl::StatusOr<std::unique_ptr<engine::DraftSession>> NewSession() const override;

 private:
  engine::DrafterInfo info_;
  int miss_every_;
};

// Greedy argmax, or a draw keyed by (seed, position) from the tempered softmax.
class ToySampler : public engine::TokenSampler {
 public:
  absl::StatusOr<uint32_t> Sample(absl::Span<const float> logits,
                                  const engine::SamplingOptions& options,
                                  int64_t position) const override;
};

// The toy target's logits row after `prefix`.
void ToyLogits(absl::Span<const uint32_t> prefix, int vocab, float* out);

}  // namespace twinspan::testing

#endif  // TWINSPAN_TESTS_INTEGRATION_TOY_MODELS_H_
