// Small deterministic stand-ins for the target, drafter and sampler, used to test the engine's
// exactness logic without model weights. They are test doubles, never served: a row's logits are a
// hash of the tokens before it, so verify windows equal single steps by construction.
#ifndef TWINSPAN_TESTS_INTEGRATION_TOY_MODELS_H_
#define TWINSPAN_TESTS_INTEGRATION_TOY_MODELS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "services/engine/draft_model.h"
#include "services/engine/verifier_model.h"

namespace twinspan::testing {

// Logits over `vocab` ids from the hash of a token prefix; eos_id ends streams sometimes.
class ToyVerifier : public engine::VerifierModel {
 public:
  ToyVerifier(int vocab, int64_t context, uint32_t eos_id, int hidden_size = 4);
  const engine::VerifierInfo& info() const override { return info_; }
  absl::StatusOr<std::unique_ptr<engine::VerifierSequence>> NewSequence() const override;

 private:
  engine::VerifierInfo info_;
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
