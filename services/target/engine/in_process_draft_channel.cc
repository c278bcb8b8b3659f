#include "services/target/engine/in_process_draft_channel.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace twinspan::engine {

absl::Status InProcessDraftChannel::Open(const DraftOpen& open) {
  if (failed_.load()) return absl::UnavailableError("drafter (in-process) is down");
  absl::StatusOr<std::unique_ptr<DraftSession>> session = model_->NewSession();
  if (!session.ok()) {
    box_.Put(open.stream_id, 1, session.status());
    return absl::OkStatus();
  }
  absl::StatusOr<DraftProposal> ids =
      (*session)->Open(open.prompt_ids, open.prompt_taps, open.pending);
  {
    absl::MutexLock lock(&mu_);
    sessions_[open.stream_id] = *std::move(session);
  }
  box_.Put(open.stream_id, 1, std::move(ids));
  return absl::OkStatus();
}

absl::Status InProcessDraftChannel::Commit(const DraftCommit& commit) {
  if (failed_.load()) return absl::UnavailableError("drafter (in-process) is down");
  DraftSession* session = nullptr;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(commit.stream_id);
    if (it != sessions_.end()) session = it->second.get();
  }
  if (session == nullptr) {
    box_.Put(commit.stream_id, commit.round + 1,
             absl::NotFoundError(absl::StrCat("drafter: no stream ", commit.stream_id)));
    return absl::OkStatus();
  }
  box_.Put(commit.stream_id, commit.round + 1,
           session->Commit(commit.ids, commit.taps, commit.pending));
  return absl::OkStatus();
}

void InProcessDraftChannel::Close(uint64_t stream_id) {
  absl::MutexLock lock(&mu_);
  sessions_.erase(stream_id);
  box_.Forget(stream_id);
}

absl::StatusOr<DraftProposal> InProcessDraftChannel::Await(uint64_t stream_id, uint32_t round,
                                                           absl::Time deadline) {
  return box_.Await(stream_id, round, deadline);
}

void InProcessDraftChannel::Kill() {
  failed_.store(true);
  box_.Fail(absl::UnavailableError("drafter (in-process) was killed"));
  absl::MutexLock lock(&mu_);
  sessions_.clear();
}

void InProcessDraftChannel::Restart() {
  box_.Reset();
  epoch_.fetch_add(1);
  failed_.store(false);
}

}  // namespace twinspan::engine
