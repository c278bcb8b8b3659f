#include "services/target/sequence_state.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace twinspan::target {

RecurrentState RecurrentState::Zeros(size_t conv_size, size_t ssm_size) {
  RecurrentState state;
  state.conv.assign(conv_size, 0.0f);
  state.ssm.assign(ssm_size, 0.0f);
  return state;
}

void RecurrentState::SaveStart() {
  conv_start = conv;
  ssm_start = ssm;
}

void RecurrentState::RestoreStart() {
  conv = conv_start;
  ssm = ssm_start;
}

void RecurrentState::SaveRow(int64_t row) {
  const size_t rows = static_cast<size_t>(row) + 1;
  if (conv_rows.size() < rows * conv.size()) conv_rows.resize(rows * conv.size());
  if (ssm_rows.size() < rows * ssm.size()) ssm_rows.resize(rows * ssm.size());
  std::copy(conv.begin(), conv.end(), conv_rows.begin() + row * conv.size());
  std::copy(ssm.begin(), ssm.end(), ssm_rows.begin() + row * ssm.size());
}

void RecurrentState::RestoreRow(int64_t row) {
  std::copy_n(conv_rows.begin() + row * conv.size(), conv.size(), conv.begin());
  std::copy_n(ssm_rows.begin() + row * ssm.size(), ssm.size(), ssm.begin());
}

absl::Status SequenceState::BeginForward(int64_t rows) {
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
  pending_ = rows;
  return absl::OkStatus();
}

absl::Status SequenceState::CommitRows(int64_t n_keep) {
  if (n_keep < 0 || n_keep > pending_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("commit of %d rows with %d pending", n_keep, pending_));
  }
  length_ += n_keep;
  pending_ = 0;
  return absl::OkStatus();
}

}  // namespace twinspan::target
