// A fixed set of threads for the HTTP server's handlers, which block (a streamed completion holds
// one for minutes): a request is taken only while a thread is free, never queued behind others.
#ifndef TWINSPAN_SERVICES_HTTP_HANDLER_POOL_H_
#define TWINSPAN_SERVICES_HTTP_HANDLER_POOL_H_

#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace twinspan::http {

// Thread-safe.
class HandlerPool {
 public:
  // REQUIRES: threads >= 1.
  explicit HandlerPool(int threads);
  // Waits for every task taken to return.
  ~HandlerPool();
  HandlerPool(const HandlerPool&) = delete;
  HandlerPool& operator=(const HandlerPool&) = delete;

  // Reserves a thread: false when all are taken (or reserved). A reservation is spent by Run or
  // given back by Release.
  bool Reserve();
  void Release();
  // Runs `task` on the reserved thread. REQUIRES: a reservation from Reserve.
  void Run(std::function<void()> task);

  // Refuses reservations from now on and waits for those taken to finish.
  void Drain();

 private:
  void Work();
  bool Ready() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !tasks_.empty(); }
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return reserved_ == 0; }

  const int threads_;
  mutable absl::Mutex mu_;
  int reserved_ ABSL_GUARDED_BY(mu_) = 0;  // reservations not yet finished
  std::vector<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace twinspan::http

#endif  // TWINSPAN_SERVICES_HTTP_HANDLER_POOL_H_
