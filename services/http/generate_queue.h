// A GenerateWriter whose messages an HTTP handler thread takes in order: the backend writes from
// any thread, the handler blocks in Next until a message, the end of the call, or its deadline.
#ifndef TWINSPAN_SERVICES_HTTP_GENERATE_QUEUE_H_
#define TWINSPAN_SERVICES_HTTP_GENERATE_QUEUE_H_

#include <deque>
#include <functional>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/rpc/cancel_hook.h"
#include "services/rpc/serving_backend.h"

namespace twinspan::http {

// Thread-safe.
class GenerateQueue : public rpc::GenerateWriter {
 public:
  void Write(v1::GenerateResponse response) override;
  void Finish(const absl::Status& status) override;
  bool Cancelled() const override { return cancel_.cancelled(); }
  bool Streamed() const override;
  void OnCancel(std::function<void()> hook) override;

  // The client went away or the deadline passed: runs the cancel hook once; later writes drop.
  void Cancel();

  // The next message, or nullopt once the call finished (status() then says how) or `until`
  // passed (status() still unknown: check finished()).
  std::optional<v1::GenerateResponse> Next(absl::Time until);
  bool finished() const;
  absl::Status status() const;

 private:
  mutable absl::Mutex mu_;
  std::deque<v1::GenerateResponse> queue_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool streamed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  rpc::CancelHook cancel_;
};

}  // namespace twinspan::http

#endif  // TWINSPAN_SERVICES_HTTP_GENERATE_QUEUE_H_
