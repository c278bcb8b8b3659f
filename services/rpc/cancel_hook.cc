#include "services/rpc/cancel_hook.h"

#include <utility>

namespace twinspan::rpc {

void CancelHook::Set(std::function<void()> hook) {
  {
    absl::MutexLock lock(&mu_);
    if (hook_set_) return;  // one hook only
    hook_set_ = true;
    if (!cancel_ran_) {
      hook_ = std::move(hook);
      return;
    }
  }
  hook();  // already cancelled
}

void CancelHook::Cancel() {
  cancelled_.store(true);
  std::function<void()> hook;
  {
    absl::MutexLock lock(&mu_);
    if (cancel_ran_) return;
    cancel_ran_ = true;
    hook.swap(hook_);
  }
  if (hook) hook();
}

}  // namespace twinspan::rpc
