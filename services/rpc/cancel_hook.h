// The one-shot cancel hook of a GenerateWriter: the hook runs once, whether it is registered
// before or after the cancel.
#ifndef TWINSPAN_SERVICES_RPC_CANCEL_HOOK_H_
#define TWINSPAN_SERVICES_RPC_CANCEL_HOOK_H_

#include <atomic>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace twinspan::rpc {

// Thread-safe.
class CancelHook {
 public:
  // GenerateWriter::OnCancel: keeps `hook`, or runs it now when Cancel already ran. Only the
  // first hook is kept.
  void Set(std::function<void()> hook);
  // Marks the call cancelled and runs the hook once; later calls only mark.
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }

 private:
  absl::Mutex mu_;
  std::function<void()> hook_ ABSL_GUARDED_BY(mu_);
  bool hook_set_ ABSL_GUARDED_BY(mu_) = false;
  bool cancel_ran_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> cancelled_{false};
};

}  // namespace twinspan::rpc

#endif  // TWINSPAN_SERVICES_RPC_CANCEL_HOOK_H_
