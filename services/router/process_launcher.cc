#include "services/router/process_launcher.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "spdlog/spdlog.h"

extern char** environ;

namespace twinspan::router {
namespace {

std::string DescribeExit(int status) {
  return WIFEXITED(status) ? absl::StrCat("exit ", WEXITSTATUS(status))
                           : absl::StrCat("signal ", WTERMSIG(status));
}

}  // namespace

ProcessLauncher::ProcessLauncher(std::string binary_dir, RestartPolicy policy,
                                 std::function<void(const std::string&)> on_restart)
    : binary_dir_(std::move(binary_dir)),
      policy_(policy),
      on_restart_(std::move(on_restart)),
      supervisor_([this] { Supervise(); }) {}

absl::Status ProcessLauncher::Launch(const LaunchSpec& spec) {
  Child child;
  child.spec = spec;
  child.path = spec.binary.find('/') == std::string::npos
                   ? absl::StrCat(binary_dir_, "/", spec.binary)
                   : spec.binary;
  child.delay = policy_.first_delay;
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Spawn(child); !s.ok()) return s;
  children_.push_back(std::move(child));
  return absl::OkStatus();
}

absl::Status ProcessLauncher::Spawn(Child& child) {
  const LaunchSpec& spec = child.spec;
  std::vector<std::string> argv_storage = {child.path};
  argv_storage.insert(argv_storage.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The environment of the router, with this worker's GPU choice.
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!spec.gpu.empty() && std::strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21) == 0) continue;
    env_storage.emplace_back(*e);
  }
  if (!spec.gpu.empty()) env_storage.push_back(absl::StrCat("CUDA_VISIBLE_DEVICES=", spec.gpu));
  std::vector<char*> envp;
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, child.path.c_str(), nullptr, nullptr, argv.data(), envp.data());
  if (rc != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("router: cannot start ", child.path, ": ", std::strerror(rc)));
  }
  spdlog::info("router: started {} (pid {}, CUDA_VISIBLE_DEVICES={})", spec.name, pid,
               spec.gpu.empty() ? "unchanged" : spec.gpu);
  child.pid = pid;
  child.started = absl::Now();
  return absl::OkStatus();
}

void ProcessLauncher::Supervise() {
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(100))) {
    const absl::Time now = absl::Now();
    for (Child& c : children_) {
      if (c.pid > 0) {
        int status = 0;
        if (waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
        const std::string line =
            absl::StrCat(c.spec.name, " (pid ", c.pid, ", ", DescribeExit(status), ")");
        if (now - c.started >= policy_.stable) c.delay = policy_.first_delay;
        spdlog::warn("router: {} exited; starting it again in {}", line,
                     absl::FormatDuration(c.delay));
        exits_.push_back(line);
        c.pid = -1;
        c.restart_at = now + c.delay;
        c.delay = std::min(c.delay * 2, policy_.max_delay);
      } else if (now >= c.restart_at) {
        if (absl::Status s = Spawn(c); !s.ok()) {
          spdlog::error("{}; trying again in {}", s.ToString(), absl::FormatDuration(c.delay));
          c.restart_at = now + c.delay;
        } else if (on_restart_) {
          on_restart_(c.spec.name);
        }
      }
    }
  }
}

std::vector<std::string> ProcessLauncher::Exits() const {
  absl::MutexLock lock(&mu_);
  return exits_;
}

void ProcessLauncher::StopAll(absl::Duration grace) {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (supervisor_.joinable()) supervisor_.join();
  absl::MutexLock lock(&mu_);
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) {
    if (it->pid > 0) kill(it->pid, SIGTERM);
  }
  const absl::Time deadline = absl::Now() + grace;
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) {
    while (it->pid > 0) {
      int status = 0;
      if (waitpid(it->pid, &status, WNOHANG) == it->pid) {
        spdlog::info("router: {} (pid {}) stopped ({})", it->spec.name, it->pid,
                     DescribeExit(status));
        it->pid = -1;
        break;
      }
      if (absl::Now() > deadline) {
        spdlog::warn("router: {} (pid {}) did not stop in time; killing it", it->spec.name,
                     it->pid);
        kill(it->pid, SIGKILL);
        waitpid(it->pid, &status, 0);
        it->pid = -1;
        break;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  children_.clear();
}

}  // namespace twinspan::router
