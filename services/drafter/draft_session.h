// One stream's drafting session in the shape the lane engine drives: Open with the prompt's taps,
// then per round Commit the tokens that entered the target's context with their taps. Each call
// returns the proposals after the new pending token. No threads, no I/O.
#ifndef TWINSPAN_SERVICES_DRAFTER_DRAFT_SESSION_H_
#define TWINSPAN_SERVICES_DRAFTER_DRAFT_SESSION_H_

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "services/drafter/drafter.h"

namespace twinspan::drafter {

// Not thread-safe: one caller at a time. The Drafter must outlive the session.
class DraftSession {
 public:
  // ResourceExhausted when the stream's caches cannot be allocated.
  static absl::StatusOr<std::unique_ptr<DraftSession>> Create(const Drafter& drafter);

  // Appends the prompt's `rows` tap rows (positions 0..rows-1) and proposes after `pending`, the
  // token at position rows. FailedPrecondition when already open; errors of AppendTaps / Propose.
  absl::StatusOr<Proposal> Open(TapForm form, std::span<const float> taps, int64_t rows,
                                int32_t pending, const ProposeOptions& options = {});

  // `ids` entered the target's context after the last call: the previous pending token first, then
  // the accepted drafts; `taps` holds one row for each. Appends them and proposes after `pending`.
  // FailedPrecondition before Open; InvalidArgument (session unchanged) when ids is empty or does
  // not start with the previous pending token, or pending is outside the vocabulary; errors of
  // AppendTaps / Propose.
  absl::StatusOr<Proposal> Commit(std::span<const int32_t> ids, TapForm form,
                                  std::span<const float> taps, int32_t pending,
                                  const ProposeOptions& options = {});

  // Positions with context (the next pending token's position).
  int64_t context_length() const { return stream_->context_length(); }

 private:
  DraftSession(const Drafter& drafter, std::unique_ptr<DraftStream> stream)
      : drafter_(drafter), stream_(std::move(stream)) {}

  const Drafter& drafter_;
  std::unique_ptr<DraftStream> stream_;
  bool open_ = false;
  int32_t pending_ = -1;
};

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_DRAFTER_DRAFT_SESSION_H_
