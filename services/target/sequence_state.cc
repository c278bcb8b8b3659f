#include "services/target/sequence_state.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace twinspan::target {

absl::StatusOr<std::unique_ptr<RecurrentState>> RecurrentState::Create(backend::Backend& backend,
                                                                       int64_t conv_floats,
                                                                       int64_t ssm_floats) {
  auto state = std::unique_ptr<RecurrentState>(new RecurrentState());
  for (int i = 0; i < 2; ++i) {
    ABSL_ASSIGN_OR_RETURN(state->conv_[i], backend.AllocateFloats(conv_floats));
    ABSL_ASSIGN_OR_RETURN(state->ssm_[i], backend.AllocateFloats(ssm_floats));
  }
  ABSL_ASSIGN_OR_RETURN(state->replay_, backend.AllocateFloats(0));
  ABSL_RETURN_IF_ERROR(backend.Zero(state->conv().data(), state->conv().bytes()));
  ABSL_RETURN_IF_ERROR(backend.Zero(state->ssm().data(), state->ssm().bytes()));
  return state;
}

absl::StatusOr<float*> RecurrentState::BeginForward(backend::Backend& backend, int64_t rows,
                                                    int64_t replay_floats, bool tree) {
  pending_rows_ = 0;
  pending_tree_ = tree;
  if (replay_->bytes() < static_cast<size_t>(replay_floats) * sizeof(float)) {
    ABSL_ASSIGN_OR_RETURN(replay_, backend.AllocateFloats(replay_floats));
  }
  pending_rows_ = rows;
  return replay_->floats();
}

SequenceState::~SequenceState() {
  if (owner_mu_ == nullptr) return;
  // The backend is not thread-safe: free the caches under the model's lock.
  absl::MutexLock lock(owner_mu_);
  layers_.clear();
}

absl::Status SequenceState::CheckForward(int64_t rows) const {
  if (pending_ != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "forward with %d rows still pending: Commit the last forward first", pending_));
  }
  if (rows < 1) return absl::InvalidArgumentError(absl::StrFormat("forward of %d rows", rows));
  if (length_ + rows > capacity_) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("sequence needs %d positions (%d committed + %d new) but the context is %d",
                        length_ + rows, length_, rows, capacity_));
  }
  return absl::OkStatus();
}

absl::Status SequenceState::BeginForward(int64_t rows, absl::Span<const int32_t> parents) {
  ABSL_RETURN_IF_ERROR(CheckForward(rows));
  pending_ = rows;
  pending_parents_.assign(parents.begin(), parents.end());
  return absl::OkStatus();
}

absl::Status SequenceState::CheckPath(absl::Span<const int64_t> path) const {
  const int64_t n = static_cast<int64_t>(path.size());
  if (n > pending_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("commit of %d rows with %d pending", n, pending_));
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t parent = i == 0 ? -1 : path[i - 1];
    const bool ok = pending_parents_.empty()
                        ? path[i] == i
                        : path[i] >= 0 && path[i] < pending_ && pending_parents_[path[i]] == parent;
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "commit path: row %d at step %d does not follow row %d in the pending %s of %d rows",
          path[i], i, parent, pending_parents_.empty() ? "chain" : "tree", pending_));
    }
  }
  return absl::OkStatus();
}

absl::Status SequenceState::CommitRows(int64_t n_keep) {
  if (n_keep < 0 || n_keep > pending_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("commit of %d rows with %d pending", n_keep, pending_));
  }
  length_ += n_keep;
  pending_ = 0;
  pending_parents_.clear();
  return absl::OkStatus();
}

absl::Status SequenceState::Resume(int64_t length) {
  if (length_ != 0 || pending_ != 0) {
    return absl::FailedPreconditionError(
        absl::StrFormat("resume of a prefix into a state with %d committed and %d pending rows",
                        length_, pending_));
  }
  if (length < 0) return absl::InvalidArgumentError(absl::StrFormat("resume of %d rows", length));
  if (length > capacity_) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "a cached prefix of %d positions does not fit the context of %d", length, capacity_));
  }
  length_ = length;
  return absl::OkStatus();
}

}  // namespace twinspan::target
