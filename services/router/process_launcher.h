// Starts the local worker processes a router config names (each with its own
// CUDA_VISIBLE_DEVICES) and stops them: SIGTERM, a grace period for their drain, then SIGKILL.
#ifndef TWINSPAN_SERVICES_ROUTER_PROCESS_LAUNCHER_H_
#define TWINSPAN_SERVICES_ROUTER_PROCESS_LAUNCHER_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "services/router/router_config.h"

namespace twinspan::router {

// Not thread-safe; owned by the router's main thread.
class ProcessLauncher {
 public:
  // `binary_dir` is where relative binaries are looked up (the router's own folder).
  explicit ProcessLauncher(std::string binary_dir) : binary_dir_(std::move(binary_dir)) {}
  ~ProcessLauncher() { StopAll(absl::Seconds(10)); }
  ProcessLauncher(const ProcessLauncher&) = delete;
  ProcessLauncher& operator=(const ProcessLauncher&) = delete;

  // Spawns one process. FailedPrecondition when the binary cannot be started.
  absl::Status Launch(const LaunchSpec& spec);
  // Processes that exited since they were launched, as "name (status)" lines.
  std::vector<std::string> Exited();
  // Stops every process, newest first.
  void StopAll(absl::Duration grace);

 private:
  struct Child {
    std::string name;
    pid_t pid = -1;
    bool exited = false;
  };
  std::string binary_dir_;
  std::vector<Child> children_;
};

}  // namespace twinspan::router

#endif  // TWINSPAN_SERVICES_ROUTER_PROCESS_LAUNCHER_H_
