#include "services/engine/deadline_draft_channel.h"

#include <algorithm>

namespace twinspan::engine {

void DeadlineDraftChannel::SetRequestDeadline(const std::string& request_id, absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) return;
  absl::MutexLock lock(&mu_);
  by_request_[request_id] = deadline;
}

void DeadlineDraftChannel::ForgetRequest(const std::string& request_id) {
  absl::MutexLock lock(&mu_);
  by_request_.erase(request_id);
}

absl::Time DeadlineDraftChannel::EffectiveDeadline(uint64_t stream_id, absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto it = by_stream_.find(stream_id);
  return it == by_stream_.end() ? deadline : std::min(deadline, it->second);
}

absl::Status DeadlineDraftChannel::Open(const DraftOpen& open) {
  {
    absl::MutexLock lock(&mu_);
    auto it = by_request_.find(open.request_id);
    if (it != by_request_.end()) by_stream_[open.stream_id] = it->second;
  }
  return inner_->Open(open);
}

void DeadlineDraftChannel::Close(uint64_t stream_id) {
  {
    absl::MutexLock lock(&mu_);
    by_stream_.erase(stream_id);
  }
  inner_->Close(stream_id);
}

absl::StatusOr<std::vector<uint32_t>> DeadlineDraftChannel::Await(uint64_t stream_id,
                                                                  uint32_t round,
                                                                  absl::Time deadline) {
  return inner_->Await(stream_id, round, EffectiveDeadline(stream_id, deadline));
}

}  // namespace twinspan::engine
