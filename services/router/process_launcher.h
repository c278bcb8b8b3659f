// Starts the local worker processes a router config names (each with its own
// CUDA_VISIBLE_DEVICES), restarts one that exits while the router runs, and stops them: SIGTERM, a
// grace period for their drain, then SIGKILL.
#ifndef TWINSPAN_SERVICES_ROUTER_PROCESS_LAUNCHER_H_
#define TWINSPAN_SERVICES_ROUTER_PROCESS_LAUNCHER_H_

#include <sys/types.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/router/router_config.h"

namespace twinspan::router {

// When a launched process that exited is started again.
struct RestartPolicy {
  absl::Duration first_delay = absl::Seconds(1);  // after the first exit
  absl::Duration max_delay = absl::Seconds(30);   // the delay doubles up to this
  absl::Duration stable = absl::Seconds(60);      // a run this long resets the delay
};

// Thread-safe. A supervisor thread reaps exited children and restarts them per the policy.
class ProcessLauncher {
 public:
  // `binary_dir` is where relative binaries are looked up (the router's own folder); `on_restart`
  // (when set) is called with the process's name each time it is started again.
  explicit ProcessLauncher(std::string binary_dir, RestartPolicy policy = {},
                           std::function<void(const std::string&)> on_restart = {});
  ~ProcessLauncher() { StopAll(absl::Seconds(10)); }
  ProcessLauncher(const ProcessLauncher&) = delete;
  ProcessLauncher& operator=(const ProcessLauncher&) = delete;

  // Spawns one process. FailedPrecondition when the binary cannot be started.
  absl::Status Launch(const LaunchSpec& spec);
  // Every exit seen so far, oldest first, as "name (pid N, exit N | signal N)" lines.
  std::vector<std::string> Exits() const;
  // Stops restarting, then stops every process, newest first.
  void StopAll(absl::Duration grace);

 private:
  struct Child {
    LaunchSpec spec;
    std::string path;
    pid_t pid = -1;  // -1: exited, waiting for `restart_at`
    absl::Time started;
    absl::Time restart_at;
    absl::Duration delay;
  };
  absl::Status Spawn(Child& child) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Supervise();

  const std::string binary_dir_;
  const RestartPolicy policy_;
  const std::function<void(const std::string&)> on_restart_;
  mutable absl::Mutex mu_;
  std::vector<Child> children_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> exits_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread supervisor_;
};

}  // namespace twinspan::router

#endif  // TWINSPAN_SERVICES_ROUTER_PROCESS_LAUNCHER_H_
