// A DraftChannel decorator that bounds each stream's wait for proposals by its request's deadline:
// the lane engine waits until the round's draft deadline, and a request whose own deadline comes
// first should not wait past it. The serving layer records each request's deadline by request id
// before it submits; Open ties the stream to it.
#ifndef TWINSPAN_SERVICES_ENGINE_DEADLINE_DRAFT_CHANNEL_H_
#define TWINSPAN_SERVICES_ENGINE_DEADLINE_DRAFT_CHANNEL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/engine/draft_channel.h"

namespace twinspan::engine {

// Thread-safe. `inner` is not owned and must outlive this.
class DeadlineDraftChannel : public DraftChannel {
 public:
  explicit DeadlineDraftChannel(DraftChannel* inner) : inner_(inner) {}

  // Records the deadline of `request_id` (before the request is submitted); ForgetRequest drops
  // it once the request ended. An infinite deadline is not recorded.
  void SetRequestDeadline(const std::string& request_id, absl::Time deadline);
  void ForgetRequest(const std::string& request_id);
  // The deadline Await uses for `stream_id` when the engine asks for `deadline` (for tests).
  absl::Time EffectiveDeadline(uint64_t stream_id, absl::Time deadline) const;

  bool ready() const override { return inner_->ready(); }
  DrafterInfo peer() const override { return inner_->peer(); }
  uint64_t epoch() const override { return inner_->epoch(); }
  absl::Status Open(const DraftOpen& open) override;
  absl::Status Commit(const DraftCommit& commit) override { return inner_->Commit(commit); }
  void Close(uint64_t stream_id) override;
  // Waits until the earlier of `deadline` and the stream's request deadline.
  absl::StatusOr<std::vector<uint32_t>> Await(uint64_t stream_id, uint32_t round,
                                              absl::Time deadline) override;

 private:
  DraftChannel* inner_;
  mutable absl::Mutex mu_;
  std::map<std::string, absl::Time> by_request_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, absl::Time> by_stream_ ABSL_GUARDED_BY(mu_);
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_ENGINE_DEADLINE_DRAFT_CHANNEL_H_
