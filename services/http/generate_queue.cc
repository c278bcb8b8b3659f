#include "services/http/generate_queue.h"

#include <utility>

namespace twinspan::http {

void GenerateQueue::Write(v1::GenerateResponse response) {
  absl::MutexLock lock(&mu_);
  if (finished_ || cancel_.cancelled()) return;
  streamed_ = true;
  queue_.push_back(std::move(response));
}

void GenerateQueue::Finish(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  if (finished_) return;
  finished_ = true;
  status_ = status;
}

bool GenerateQueue::Streamed() const {
  absl::MutexLock lock(&mu_);
  return streamed_;
}

void GenerateQueue::OnCancel(std::function<void()> hook) { cancel_.Set(std::move(hook)); }

void GenerateQueue::Cancel() { cancel_.Cancel(); }

std::optional<v1::GenerateResponse> GenerateQueue::Next(absl::Time until) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !queue_.empty() || finished_; };
  mu_.AwaitWithDeadline(absl::Condition(&ready), until);
  if (queue_.empty()) return std::nullopt;
  v1::GenerateResponse next = std::move(queue_.front());
  queue_.pop_front();
  return next;
}

bool GenerateQueue::finished() const {
  absl::MutexLock lock(&mu_);
  return finished_;
}

absl::Status GenerateQueue::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

}  // namespace twinspan::http
