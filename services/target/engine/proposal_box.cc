#include "services/target/engine/proposal_box.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace twinspan::engine {

bool UsableProposal(const std::vector<uint32_t>& ids, int vocab_size, int block_size) {
  if (block_size < 1 || ids.size() > static_cast<size_t>(block_size - 1)) return false;
  for (uint32_t id : ids) {
    if (id >= static_cast<uint32_t>(vocab_size)) return false;
  }
  return true;
}

void ProposalBox::Put(uint64_t stream_id, uint32_t round, absl::StatusOr<DraftProposal> answer) {
  absl::MutexLock lock(&mu_);
  auto it = answers_.find(stream_id);
  if (it != answers_.end() && it->second.round > round) {
    ++stale_dropped_;  // an older round arriving after a newer one is never applied
    return;
  }
  answers_[stream_id] = Answer{round, std::move(answer)};
}

absl::StatusOr<DraftProposal> ProposalBox::Await(uint64_t stream_id, uint32_t round,
                                                 absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto arrived = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!failure_.ok()) return true;
    auto it = answers_.find(stream_id);
    return it != answers_.end() && it->second.round >= round;
  };
  mu_.AwaitWithDeadline(absl::Condition(&arrived), deadline);
  if (!failure_.ok()) return failure_;
  auto it = answers_.find(stream_id);
  if (it == answers_.end() || it->second.round < round) {
    return absl::DeadlineExceededError(
        absl::StrCat("drafter: no proposal for stream ", stream_id, " round ", round));
  }
  if (it->second.round > round) {
    return absl::InternalError(absl::StrCat("drafter: proposal for stream ", stream_id,
                                            " is for round ", it->second.round, ", ahead of round ",
                                            round));
  }
  auto answer = answers_.extract(it);
  return std::move(answer.mapped().value);
}

void ProposalBox::Forget(uint64_t stream_id) {
  absl::MutexLock lock(&mu_);
  answers_.erase(stream_id);
}

void ProposalBox::Fail(absl::Status status) {
  absl::MutexLock lock(&mu_);
  failure_ = std::move(status);
  answers_.clear();
}

void ProposalBox::Reset() {
  absl::MutexLock lock(&mu_);
  failure_ = absl::OkStatus();
  answers_.clear();
}

int64_t ProposalBox::stale_dropped() const {
  absl::MutexLock lock(&mu_);
  return stale_dropped_;
}

}  // namespace twinspan::engine
