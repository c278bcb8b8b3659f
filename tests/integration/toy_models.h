// Small deterministic stand-ins for the target, drafter and sampler, used to test the engine's
// exactness logic without model weights. They are test doubles, never served: a row's logits are a
// hash of the tokens before it, so verify windows equal single steps by construction.
#ifndef TWINSPAN_TESTS_INTEGRATION_TOY_MODELS_H_
#define TWINSPAN_TESTS_INTEGRATION_TOY_MODELS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/draft_link/draft_model.h"
#include "services/draft_link/tap_fusion.h"
#include "services/target/engine/verifier_model.h"

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

// A prefill that takes `per_chunk` for every `chunk_rows` prompt rows and asks
// PrefillControl::keep_going between chunks, as a long prompt on a real target does.
struct ToySlowPrefill {
  int64_t chunk_rows = 0;  // 0: instant
  absl::Duration per_chunk;
};

// Logits over `vocab` ids from the hash of a token prefix; eos_id ends streams sometimes.
// VerifyBatch is the default loop, logged. Sequences verify trees (VerifierInfo::verifies_trees).
class ToyVerifier : public engine::VerifierModel {
 public:
  ToyVerifier(int vocab, int64_t context, uint32_t eos_id, int hidden_size = 4);
  const engine::VerifierInfo& info() const override { return info_; }
  absl::StatusOr<std::unique_ptr<engine::VerifierSequence>> NewSequence() const override;
  void VerifyBatch(absl::Span<engine::VerifyJob> jobs) const override;
  const ToyVerifyLog& log() const { return *log_; }
  // Sequences made after this prefill slowly. Not thread-safe: set before the engine starts.
  void SetSlowPrefill(ToySlowPrefill slow) { slow_ = slow; }
  // Sequences made after this count in a cycle: the token after x at position p is (x + 1) mod
  // `period`, or (x + 2) mod `period` where p is a multiple of 50, so text repeats with breaks
  // (what context-copy drafts feed on). 0: the hashed logits. Set before the engine starts.
  void SetCycle(uint32_t period) { cycle_ = period; }

 private:
  engine::VerifierInfo info_;
  ToySlowPrefill slow_;
  uint32_t cycle_ = 0;
  std::unique_ptr<ToyVerifyLog> log_ = std::make_unique<ToyVerifyLog>();
};

// Proposes the toy target's greedy continuation, except that every `miss_every`-th proposal is
// replaced by a wrong id, so acceptance is partial. With `tree_nodes`, proposals are trees: the
// right token hangs beside each wrong one, so a tree verify accepts past it.
class ToyDrafter : public engine::DraftModel {
 public:
  // `fused_width` 0: half the raw row.
  ToyDrafter(int vocab, int block_size, int miss_every, int tap_width, int64_t fused_width = 0,
             int tree_nodes = 0);
  const engine::DrafterInfo& info() const override { return info_; }
  absl::StatusOr<std::unique_ptr<engine::DraftSession>> NewSession() const override;

 private:
  engine::DrafterInfo info_;
  int miss_every_;
};

// A stand-in for TapFuser: fused rows are the first fused_width values of each raw row (so a
// row still starts with its id, which ToyDrafter checks).
class ToyTapFusion : public engine::TapFusion {
 public:
  ToyTapFusion(int64_t raw_width, int64_t fused_width, std::string fingerprint = "toy-drafter");
  const std::string& drafter_fingerprint() const override { return fingerprint_; }
  const std::vector<int64_t>& target_layer_ids() const override { return layers_; }
  int64_t raw_width() const override { return raw_width_; }
  int64_t fused_width() const override { return fused_width_; }
  absl::Status Fuse(const float* raw, int64_t rows, float* fused) const override;

 private:
  int64_t raw_width_, fused_width_;
  std::string fingerprint_;
  std::vector<int64_t> layers_ = {0, 1};
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
