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
    target::ForwardRequest request;
    request.tokens = tokens;
    request.logits = target::LogitsRows::kAll;
    request.tap_layer_ids = taps;
    target::ForwardResult result;
    ABSL_RETURN_IF_ERROR(model_->Forward(*state_, request, &result));
    out->rows = result.rows;
    out->logits = std::move(result.logits);
    out->taps = std::move(result.taps);
    return absl::OkStatus();
  }

  absl::Status Commit(int64_t n_keep) override { return model_->Commit(*state_, n_keep); }

 private:
  const target::TargetModel* model_;
  std::unique_ptr<target::SequenceState> state_;
  int64_t chunk_rows_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<engine::VerifierSequence>> TargetVerifier::NewSequence() const {
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::SequenceState> state, model_->NewSequence());
  return std::make_unique<TargetSequence>(model_, std::move(state), prefill_chunk_rows_);
}

}  // namespace twinspan::serving
