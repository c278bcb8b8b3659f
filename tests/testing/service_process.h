// A Twinspan service started by a test on 127.0.0.1: stdout and stderr go to log files, the ports
// come from the "<role> listening grpc=<port> metrics=<port>" line the service prints once it
// serves (port 0 in its flags: it picks its own), and it is stopped with SIGTERM (SIGKILL after a
// grace period) when destroyed. For tests that run the real binaries.
#ifndef TWINSPAN_TESTS_TESTING_SERVICE_PROCESS_H_
#define TWINSPAN_TESTS_TESTING_SERVICE_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace twinspan::testing {

class ServiceProcess {
 public:
  // Starts `binary` with `args`, logs under `log_dir`/`name`.{out,log}, and waits up to `timeout`
  // for its listening line (the one of `role` when given: a router's children share its stdout).
  // FailedPrecondition with the log's tail when it exits or stays silent.
  static absl::StatusOr<std::unique_ptr<ServiceProcess>> Start(
      const std::string& name, const std::string& binary, const std::vector<std::string>& args,
      const std::string& log_dir, absl::Duration timeout, const std::string& role = "");
  ~ServiceProcess();
  ServiceProcess(const ServiceProcess&) = delete;
  ServiceProcess& operator=(const ServiceProcess&) = delete;

  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }
  // The last `lines` lines of its stderr log.
  std::string LogTail(int lines = 30) const;
  // SIGTERM, then SIGKILL after `grace`; returns the exit status (-1 when killed).
  int Stop(absl::Duration grace = absl::Seconds(20));

 private:
  ServiceProcess(std::string name, pid_t pid, std::string out_path, std::string log_path)
      : name_(std::move(name)),
        pid_(pid),
        out_path_(std::move(out_path)),
        log_path_(std::move(log_path)) {}

  std::string name_;
  pid_t pid_ = -1;
  std::string out_path_, log_path_;
  int port_ = 0;
  int metrics_port_ = 0;
  bool stopped_ = false;
};

// Runs `binary args...` to completion (stdout and stderr to `log`); its exit status, or -1.
int RunToCompletion(const std::string& binary, const std::vector<std::string>& args,
                    const std::string& log);

}  // namespace twinspan::testing

#endif  // TWINSPAN_TESTS_TESTING_SERVICE_PROCESS_H_
