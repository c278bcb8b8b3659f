#include "services/router/process_launcher.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "spdlog/spdlog.h"

extern char** environ;

namespace twinspan::router {

absl::Status ProcessLauncher::Launch(const LaunchSpec& spec) {
  std::string path = spec.binary;
  if (path.find('/') == std::string::npos) path = absl::StrCat(binary_dir_, "/", path);
  std::vector<std::string> argv_storage = {path};
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
  const int rc = posix_spawn(&pid, path.c_str(), nullptr, nullptr, argv.data(), envp.data());
  if (rc != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("router: cannot start ", path, ": ", std::strerror(rc)));
  }
  spdlog::info("router: started {} (pid {}, CUDA_VISIBLE_DEVICES={})", spec.name, pid,
               spec.gpu.empty() ? "unchanged" : spec.gpu);
  children_.push_back(Child{spec.name, pid, false});
  return absl::OkStatus();
}

std::vector<std::string> ProcessLauncher::Exited() {
  std::vector<std::string> out;
  for (Child& c : children_) {
    if (c.exited) continue;
    int status = 0;
    if (waitpid(c.pid, &status, WNOHANG) == c.pid) {
      c.exited = true;
      out.push_back(absl::StrCat(c.name, " (pid ", c.pid, ", ",
                                 WIFEXITED(status) ? absl::StrCat("exit ", WEXITSTATUS(status))
                                                   : absl::StrCat("signal ", WTERMSIG(status)),
                                 ")"));
    }
  }
  return out;
}

void ProcessLauncher::StopAll(absl::Duration grace) {
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) {
    if (!it->exited) kill(it->pid, SIGTERM);
  }
  const absl::Time deadline = absl::Now() + grace;
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) {
    while (!it->exited) {
      int status = 0;
      if (waitpid(it->pid, &status, WNOHANG) == it->pid) {
        it->exited = true;
        spdlog::info("router: {} (pid {}) stopped", it->name, it->pid);
        break;
      }
      if (absl::Now() > deadline) {
        spdlog::warn("router: {} (pid {}) did not stop in time; killing it", it->name, it->pid);
        kill(it->pid, SIGKILL);
        waitpid(it->pid, &status, 0);
        it->exited = true;
        break;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  children_.clear();
}

}  // namespace twinspan::router
