// Mailbox between the transport that delivers proposals and the engine thread that awaits them.
// Keeps only the newest answer per stream; an answer for a round nobody waits for is dropped.
#ifndef TWINSPAN_SERVICES_TARGET_ENGINE_PROPOSAL_BOX_H_
#define TWINSPAN_SERVICES_TARGET_ENGINE_PROPOSAL_BOX_H_

#include <cstdint>
#include <map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/draft_link/draft_proposal.h"

namespace twinspan::engine {

// Thread-safe.
class ProposalBox {
 public:
  // Stores the drafter's answer for (stream, round): a proposal, or a per-stream error.
  void Put(uint64_t stream_id, uint32_t round, absl::StatusOr<DraftProposal> answer);
  // Waits for (stream, round) until `deadline`; a stored answer for an older round is stale and
  // discarded. DeadlineExceeded when none came; Unavailable after Fail().
  absl::StatusOr<DraftProposal> Await(uint64_t stream_id, uint32_t round, absl::Time deadline);
  void Forget(uint64_t stream_id);
  // Wakes every waiter with `status` and drops stored answers (the link is gone).
  void Fail(absl::Status status);
  // Clears the failure after a reconnect.
  void Reset();
  // Answers dropped as stale (for tests and logs).
  int64_t stale_dropped() const;

 private:
  struct Answer {
    uint32_t round = 0;
    absl::StatusOr<DraftProposal> value;
  };
  mutable absl::Mutex mu_;
  std::map<uint64_t, Answer> answers_ ABSL_GUARDED_BY(mu_);
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  int64_t stale_dropped_ ABSL_GUARDED_BY(mu_) = 0;
};

// True when `ids` can be verified: at most block_size - 1 of them (a proposal follows the pending
// token within one block), each inside the vocabulary. Anything else is dropped whole.
bool UsableProposal(const std::vector<uint32_t>& ids, int vocab_size, int block_size);

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_TARGET_ENGINE_PROPOSAL_BOX_H_
