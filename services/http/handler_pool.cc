#include "services/http/handler_pool.h"

#include <utility>

namespace twinspan::http {

HandlerPool::HandlerPool(int threads) : threads_(threads) {
  workers_.reserve(threads);
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
}

HandlerPool::~HandlerPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& worker : workers_) worker.join();
}

bool HandlerPool::Reserve() {
  absl::MutexLock lock(&mu_);
  if (draining_ || reserved_ >= threads_) return false;
  ++reserved_;
  return true;
}

void HandlerPool::Release() {
  absl::MutexLock lock(&mu_);
  --reserved_;
}

void HandlerPool::Run(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
}

void HandlerPool::Drain() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
  mu_.Await(absl::Condition(this, &HandlerPool::Idle));
}

void HandlerPool::Work() {
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &HandlerPool::Ready));
      // Tasks taken before the stop still run: their reservations promised them a thread.
      if (tasks_.empty()) return;
      task = std::move(tasks_.back());
      tasks_.pop_back();
    }
    task();
    Release();
  }
}

}  // namespace twinspan::http
