#include "services/target/server/target_verifier.h"

#include <vector>

#include "common/status.h"

namespace twinspan::serving {
namespace {

std::vector<int32_t> ToInt32(absl::Span<const uint32_t> ids) {
  return std::vector<int32_t>(ids.begin(), ids.end());
}

class TargetSequence : public engine::VerifierSequence {
 public:
  TargetSequence(const target::TargetModel* model, std::unique_ptr<target::SequenceState> state,
                 int64_t chunk_rows)
      : model_(model), state_(std::move(state)), chunk_rows_(chunk_rows) {}

  int64_t length() const override { return state_->length(); }

  absl::Status Prefill(absl::Span<const uint32_t> prompt, const std::vector<int64_t>& taps,
                       engine::WindowOutput* out) override {
    const std::vector<int32_t> tokens = ToInt32(prompt);
    ABSL_ASSIGN_OR_RETURN(target::ForwardResult result,
                          target::Prefill(*model_, *state_, tokens, chunk_rows_, taps));
    out->rows = result.rows;
    out->logits = std::move(result.logits);
    out->taps = std::move(result.taps);
    return absl::OkStatus();
  }

  absl::Status Verify(absl::Span<const uint32_t> window, const std::vector<int64_t>& taps,
                      engine::WindowOutput* out) override {
    const std::vector<int32_t> tokens = ToInt32(window);
    const target::ForwardRequest request = VerifyRequest(tokens, taps);
    target::ForwardResult result;
    ABSL_RETURN_IF_ERROR(model_->Forward(*state_, request, &result));
    Deliver(std::move(result), out);
    return absl::OkStatus();
  }

  absl::Status Commit(int64_t n_keep) override { return model_->Commit(*state_, n_keep); }

  target::SequenceState& state() { return *state_; }
  const target::TargetModel* model() const { return model_; }

  static target::ForwardRequest VerifyRequest(absl::Span<const int32_t> tokens,
                                              absl::Span<const int64_t> taps) {
    target::ForwardRequest request;
    request.tokens = tokens;
    request.logits = target::LogitsRows::kAll;
    request.tap_layer_ids.assign(taps.begin(), taps.end());
    return request;
  }
  static void Deliver(target::ForwardResult result, engine::WindowOutput* out) {
    out->rows = result.rows;
    out->logits = std::move(result.logits);
    out->taps = std::move(result.taps);
  }

 private:
  const target::TargetModel* model_;
  std::unique_ptr<target::SequenceState> state_;
  int64_t chunk_rows_;
};

}  // namespace

void TargetVerifier::VerifyBatch(absl::Span<engine::VerifyJob> jobs) const {
  std::vector<std::vector<int32_t>> tokens(jobs.size());
  std::vector<target::ForwardRequest> requests(jobs.size());
  std::vector<target::ForwardResult> results(jobs.size());
  std::vector<target::SequenceForward> batch;
  std::vector<size_t> batched;  // Index of each batch entry's job.
  for (size_t i = 0; i < jobs.size(); ++i) {
    engine::VerifyJob& job = jobs[i];
    auto* sequence = dynamic_cast<TargetSequence*>(job.sequence);
    if (sequence == nullptr || sequence->model() != model_) {
      job.status = absl::InvalidArgumentError("VerifyBatch: a sequence this verifier did not make");
      continue;
    }
    tokens[i] = ToInt32(job.window);
    requests[i] = TargetSequence::VerifyRequest(tokens[i], job.tap_layer_ids);
    job.status = model_->CheckForward(sequence->state(), requests[i]);
    if (!job.status.ok()) continue;
    batch.push_back({&sequence->state(), &requests[i], &results[i]});
    batched.push_back(i);
  }
  const absl::Status status = model_->ForwardBatch(batch);
  for (size_t i : batched) {
    jobs[i].status = status;
    if (status.ok()) TargetSequence::Deliver(std::move(results[i]), jobs[i].out);
  }
}

absl::StatusOr<std::unique_ptr<engine::VerifierSequence>> TargetVerifier::NewSequence() const {
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::SequenceState> state, model_->NewSequence());
  return std::make_unique<TargetSequence>(model_, std::move(state), prefill_chunk_rows_);
}

}  // namespace twinspan::serving
