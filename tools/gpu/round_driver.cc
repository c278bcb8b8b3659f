#include "tools/gpu/round_driver.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace twinspan::gpu {

constexpr int64_t kMaxRows = kMaxRoundRows;

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
    ABSL_ASSIGN_OR_RETURN(kept_taps_, b.AllocateFloats(kMaxRows * TapWidth()));
  }
  block_ = options_.block > 0 ? options_.block : drafter_.config().block_size;
  return Draft();
}

absl::Status RoundDriver::Verify(int64_t rows, bool taps) {
  if (rows < 1 || rows > kMaxRows) {
    return absl::InvalidArgumentError(
        absl::StrFormat("verify of %d rows, need 1..%d", rows, kMaxRows));
  }
  window_ = {pending_};
  window_parents_.clear();
  if (options_.tree_nodes > 0) {
    if (rows - 1 > static_cast<int64_t>(proposals_.size())) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "verify of %d rows: the drafter's tree has %d drafts", rows, proposals_.size()));
    }
    window_parents_ = {-1};
    for (int64_t i = 1; i < rows; ++i) {  // The first drafts of a best-first tree are a tree.
      window_.push_back(proposals_[i - 1]);
      window_parents_.push_back(tree_parents_[i - 1]);
    }
  } else {
    for (int64_t i = 1; i < rows; ++i) window_.push_back(proposals_[(i - 1) % proposals_.size()]);
  }
  target::ForwardRequest request;
  request.tokens = window_;
  request.parents = window_parents_;
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
  kept_rows_ = {0};
  // A row is kept while it is a draft equal to the target's argmax of the row it follows.
  const auto parent = [&](int64_t r) {
    return window_parents_.empty() ? r - 1 : window_parents_[r];
  };
  for (bool grew = true; grew;) {
    grew = false;
    for (int64_t r = kept_rows_.back() + 1; r < rows && options_.keep == 0; ++r) {
      if (parent(r) == kept_rows_.back() && window_[r] == argmax_[kept_rows_.back()]) {
        kept_rows_.push_back(r);
        grew = true;
        break;
      }
    }
  }
  if (options_.keep > 0) {  // Forced: the first-child path.
    for (int64_t r = 1; r < rows && static_cast<int64_t>(kept_rows_.size()) < options_.keep; ++r) {
      if (parent(r) == kept_rows_.back()) kept_rows_.push_back(r);
    }
  }
  keep_ = static_cast<int64_t>(kept_rows_.size());
  ABSL_RETURN_IF_ERROR(target_.CommitPath(*state_, kept_rows_));
  pending_ = argmax_[kept_rows_.back()];
  return synchronize ? target_.backend().Synchronize() : absl::OkStatus();
}

absl::Status RoundDriver::AppendAndDraft() {
  const int64_t width = TapWidth();
  bool prefix = true;
  for (int64_t i = 0; i < keep_; ++i) prefix = prefix && kept_rows_[i] == i;
  if (taps_in_backend_) {
    const float* kept = taps_out_->floats();
    if (!prefix) {  // The kept path's rows, gathered where they are.
      backend::Backend& b = target_.backend();
      ABSL_RETURN_IF_ERROR(
          b.GatherRows(taps_out_->floats(), width, kept_rows_, width, kept_taps_->floats(), width));
      kept = kept_taps_->floats();
    }
    ABSL_RETURN_IF_ERROR(
        drafter_.AppendTapsInBackend(*stream_, drafter::TapForm::kRaw, kept, keep_));
    return Draft();
  }
  if (static_cast<int64_t>(taps_.size()) < keep_ * width) {
    return absl::FailedPreconditionError("AppendAndDraft: the last Verify had no taps");
  }
  std::vector<float> kept;
  for (int64_t row : kept_rows_) {
    kept.insert(kept.end(), taps_.begin() + row * width, taps_.begin() + (row + 1) * width);
  }
  ABSL_RETURN_IF_ERROR(drafter_.AppendTaps(*stream_, drafter::TapForm::kRaw, kept, keep_));
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
  drafter::ProposeOptions options;
  options.block_size = block_;
  options.tree_nodes = options_.tree_nodes;
  ABSL_ASSIGN_OR_RETURN(drafter::Proposal p, drafter_.Propose(*stream_, pending_, options));
  proposals_ = std::move(p.ids);
  tree_parents_ = std::move(p.tree_parents);
  return absl::OkStatus();
}

}  // namespace twinspan::gpu
