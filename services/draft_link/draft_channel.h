// The engine's link to a drafter. Two implementations: InProcessDraftChannel (calls a DraftModel
// on the caller's thread) and GrpcDraftChannel (one bidirectional Draft stream). Every message
// carries the stream id and, for commits and proposals, the round, so stale answers are dropped.
#ifndef TWINSPAN_SERVICES_DRAFT_LINK_DRAFT_CHANNEL_H_
#define TWINSPAN_SERVICES_DRAFT_LINK_DRAFT_CHANNEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "services/draft_link/draft_model.h"

namespace twinspan::engine {

struct DraftOpen {
  uint64_t stream_id = 0;
  std::string request_id;
  absl::Span<const uint32_t> prompt_ids;
  // Rows [prompt_taps.first_row, prompt_ids.size()): the target resumed the rows before from its
  // prefix cache, so the drafter must hold them in its own.
  TapRows prompt_taps;
  uint32_t pending = 0;
};

struct DraftCommit {
  uint64_t stream_id = 0;
  uint32_t round = 0;              // the verify round this reports
  absl::Span<const uint32_t> ids;  // old pending + accepted drafts
  TapRows taps;                    // one row per id
  uint32_t pending = 0;
};

// Thread-safe: the engine thread sends and awaits; transport threads deliver.
class DraftChannel {
 public:
  virtual ~DraftChannel() = default;
  // True when a drafter is connected and its handshake matched; streams opened before a
  // reconnect stay without drafts (their drafter context is gone).
  virtual bool ready() const = 0;
  // The connected drafter's description. REQUIRES: ready().
  virtual DrafterInfo peer() const = 0;
  // A number that changes whenever the link is re-established (a stream opened on an older
  // epoch must not be continued).
  virtual uint64_t epoch() const = 0;
  // Send; the proposal for round 1 (Open) or round + 1 (Commit) arrives later through Await.
  // Unavailable when not ready.
  virtual absl::Status Open(const DraftOpen& open) = 0;
  virtual absl::Status Commit(const DraftCommit& commit) = 0;
  virtual void Close(uint64_t stream_id) = 0;
  // The proposal of `stream_id` for `round`, waiting until `deadline`. Proposals for other rounds
  // are dropped. DeadlineExceeded when late; Unavailable when the link is lost; the drafter's
  // error for that stream otherwise.
  virtual absl::StatusOr<DraftProposal> Await(uint64_t stream_id, uint32_t round,
                                              absl::Time deadline) = 0;
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_DRAFT_LINK_DRAFT_CHANNEL_H_
