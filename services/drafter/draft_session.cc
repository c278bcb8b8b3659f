#include "services/drafter/draft_session.h"

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace twinspan::drafter {
namespace {

// Checked before any state changes, so a bad call leaves the session as it was.
absl::Status CheckPending(const Drafter& drafter, int32_t pending) {
  if (pending < 0 || pending >= drafter.config().vocab_size) {
    return absl::InvalidArgumentError(
        absl::StrFormat("DraftSession: pending token %d is outside the vocabulary [0, %d)", pending,
                        drafter.config().vocab_size));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<DraftSession>> DraftSession::Create(const Drafter& drafter) {
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<DraftStream> stream, drafter.NewStream());
  return std::unique_ptr<DraftSession>(new DraftSession(drafter, std::move(stream)));
}

absl::StatusOr<Proposal> DraftSession::Open(TapForm form, std::span<const float> taps, int64_t rows,
                                            int32_t pending, const ProposeOptions& options) {
  if (open_)
    return absl::FailedPreconditionError("DraftSession::Open: the session is already open");
  ABSL_RETURN_IF_ERROR(CheckPending(drafter_, pending));
  ABSL_RETURN_IF_ERROR(drafter_.AppendTaps(*stream_, form, taps, rows));
  open_ = true;
  pending_ = pending;
  return drafter_.Propose(*stream_, pending, options);
}

absl::StatusOr<Proposal> DraftSession::Commit(std::span<const int32_t> ids, TapForm form,
                                              std::span<const float> taps, int32_t pending,
                                              const ProposeOptions& options) {
  if (!open_) return absl::FailedPreconditionError("DraftSession::Commit: the session is not open");
  if (ids.empty() || ids[0] != pending_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("DraftSession::Commit: committed ids must start with the previous pending "
                        "token %d (got %s)",
                        pending_, ids.empty() ? "none" : std::to_string(ids[0])));
  }
  ABSL_RETURN_IF_ERROR(CheckPending(drafter_, pending));
  ABSL_RETURN_IF_ERROR(drafter_.AppendTaps(*stream_, form, taps, static_cast<int64_t>(ids.size())));
  pending_ = pending;
  return drafter_.Propose(*stream_, pending, options);
}

}  // namespace twinspan::drafter
