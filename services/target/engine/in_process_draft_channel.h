// DraftChannel that runs a DraftModel on the caller's thread: the single-process mode and tests.
#ifndef TWINSPAN_SERVICES_TARGET_ENGINE_IN_PROCESS_DRAFT_CHANNEL_H_
#define TWINSPAN_SERVICES_TARGET_ENGINE_IN_PROCESS_DRAFT_CHANNEL_H_

#include <atomic>
#include <map>
#include <memory>

#include "absl/synchronization/mutex.h"
#include "services/draft_link/draft_channel.h"
#include "services/target/engine/proposal_box.h"

namespace twinspan::engine {

// Thread-safe. `model` is not owned and must outlive the channel.
class InProcessDraftChannel : public DraftChannel {
 public:
  explicit InProcessDraftChannel(const DraftModel* model) : model_(model) {}

  bool ready() const override { return !failed_.load(); }
  DrafterInfo peer() const override { return model_->info(); }
  uint64_t epoch() const override { return epoch_.load(); }
  absl::Status Open(const DraftOpen& open) override;
  absl::Status Commit(const DraftCommit& commit) override;
  void Close(uint64_t stream_id) override;
  absl::StatusOr<DraftProposal> Await(uint64_t stream_id, uint32_t round,
                                      absl::Time deadline) override;

  // Test hooks: a dead drafter (every call Unavailable) and its restart (a new epoch).
  void Kill();
  void Restart();

 private:
  const DraftModel* model_;
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> epoch_{1};
  absl::Mutex mu_;
  std::map<uint64_t, std::unique_ptr<DraftSession>> sessions_ ABSL_GUARDED_BY(mu_);
  ProposalBox box_;
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_TARGET_ENGINE_IN_PROCESS_DRAFT_CHANNEL_H_
