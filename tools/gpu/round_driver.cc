#include "tools/gpu/round_driver.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace twinspan::gpu {

constexpr int64_t kMaxRows = 16;

absl::Status RoundDriver::Prefill() {
  if (options_.prompt < 1) {
    return absl::InvalidArgumentError(absl::StrFormat("prompt of %d tokens", options_.prompt));
  }
  const int64_t vocab = target_.config().vocab_size;
  std::mt19937 rng(options_.seed);
  std::vector<int32_t> prompt(options_.prompt);
  // Ids of ordinary text: below the special tail and the mask id.
  for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % std::min<int64_t>(vocab, 150000));
  ABSL_ASSIGN_OR_RETURN(state_, target_.NewSequence());
  ABSL_ASSIGN_OR_RETURN(stream_, drafter_.NewStream());
  ABSL_ASSIGN_OR_RETURN(
      target::ForwardResult r,
      target::Prefill(target_, *state_, prompt, 512, drafter_.config().target_layer_ids));
  ABSL_RETURN_IF_ERROR(
      drafter_.AppendTaps(*stream_, drafter::TapForm::kRaw, r.taps, options_.prompt));
  tap_row_.assign(r.taps.end() - TapWidth(), r.taps.end());
  pending_ =
      static_cast<int32_t>(std::max_element(r.logits.begin(), r.logits.end()) - r.logits.begin());
  backend::Backend& b = target_.backend();
  ABSL_ASSIGN_OR_RETURN(logits_, b.AllocateFloats(kMaxRows * vocab));
  ABSL_ASSIGN_OR_RETURN(top_values_, b.AllocateFloats(kMaxRows));
  ABSL_ASSIGN_OR_RETURN(top_ids_, b.Allocate(kMaxRows * sizeof(int32_t)));
  if (options_.device_taps) {
    if (&drafter_.model().backend() != &b) {
      return absl::InvalidArgumentError("RoundOptions.device_taps with two backends");
    }
    ABSL_ASSIGN_OR_RETURN(taps_out_, b.AllocateFloats(kMaxRows * TapWidth()));
  }
  block_ = options_.block > 0 ? options_.block : drafter_.config().block_size;
  return Draft();
}

absl::Status RoundDriver::Verify(int64_t rows, bool taps) {
  if (rows < 1 || rows > kMaxRows) {
    return absl::InvalidArgumentError(absl::StrFormat("verify of %d rows, need 1..16", rows));
  }
  window_ = {pending_};
  for (int64_t i = 1; i < rows; ++i) window_.push_back(proposals_[(i - 1) % proposals_.size()]);
  target::ForwardRequest request;
  request.tokens = window_;
  request.logits = target::LogitsRows::kAll;
  if (taps) request.tap_layer_ids = drafter_.config().target_layer_ids;
  request.logits_out = logits_.get();
  if (taps) request.taps_out = taps_out_.get();  // Null: the taps come to the host.
  target::ForwardResult result;
  ABSL_RETURN_IF_ERROR(target_.Forward(*state_, request, &result));
  taps_ = std::move(result.taps);
  taps_in_backend_ = taps && taps_out_ != nullptr;
  backend::Backend& b = target_.backend();
  ABSL_RETURN_IF_ERROR(b.TopK(logits_->floats(), top_values_->floats(),
                              static_cast<int32_t*>(top_ids_->data()),
                              {.rows = rows, .cols = target_.config().vocab_size, .k = 1}));
  argmax_.resize(rows);
  ABSL_RETURN_IF_ERROR(b.Download(argmax_.data(), *top_ids_, 0, rows * sizeof(int32_t)));
  for (int64_t r = 0; r < rows; ++r) {
    if (argmax_[r] < 0) {  // TopK's answer for a row without one finite logit.
      return absl::InternalError(absl::StrFormat(
          "Verify: row %d of %d has no finite logit (the target's forward diverged)", r, rows));
    }
  }
  return absl::OkStatus();
}

absl::Status RoundDriver::Commit(bool synchronize) {
  const int64_t rows = static_cast<int64_t>(window_.size());
  keep_ = 1;  // Draft i is kept while it equals the target's argmax of the row before it.
  while (keep_ < rows && window_[keep_] == argmax_[keep_ - 1]) ++keep_;
  if (options_.keep > 0) keep_ = std::min(options_.keep, rows);
  ABSL_RETURN_IF_ERROR(target_.Commit(*state_, keep_));
  pending_ = argmax_[keep_ - 1];
  return synchronize ? target_.backend().Synchronize() : absl::OkStatus();
}

absl::Status RoundDriver::AppendAndDraft() {
  const int64_t width = TapWidth();
  if (taps_in_backend_) {
    ABSL_RETURN_IF_ERROR(
        drafter_.AppendTapsInBackend(*stream_, drafter::TapForm::kRaw, taps_out_->floats(), keep_));
    return Draft();
  }
  if (static_cast<int64_t>(taps_.size()) < keep_ * width) {
    return absl::FailedPreconditionError("AppendAndDraft: the last Verify had no taps");
  }
  ABSL_RETURN_IF_ERROR(drafter_.AppendTaps(*stream_, drafter::TapForm::kRaw,
                                           std::span<const float>(taps_.data(), keep_ * width),
                                           keep_));
  return Draft();
}

absl::Status RoundDriver::AppendOneAndDraft() {
  ABSL_RETURN_IF_ERROR(
      taps_in_backend_
          ? drafter_.AppendTapsInBackend(*stream_, drafter::TapForm::kRaw, taps_out_->floats(), 1)
          : drafter_.AppendTaps(*stream_, drafter::TapForm::kRaw, tap_row_, 1));
  return Draft();
}

absl::Status RoundDriver::Draft() {
  ABSL_ASSIGN_OR_RETURN(drafter::Proposal p,
                        drafter_.Propose(*stream_, pending_, {.block_size = block_}));
  proposals_ = std::move(p.ids);
  return absl::OkStatus();
}

}  // namespace twinspan::gpu
