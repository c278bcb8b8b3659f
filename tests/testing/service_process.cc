#include "tests/testing/service_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstring>
#include <deque>
#include <fstream>
#include <regex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

extern char** environ;

namespace twinspan::testing {
namespace {

pid_t Spawn(const std::string& binary, const std::vector<std::string>& args, const std::string& out,
            const std::string& err) {
  std::vector<std::string> storage = {binary};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&files, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, binary.c_str(), &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  return rc == 0 ? pid : -1;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ServiceProcess>> ServiceProcess::Start(
    const std::string& name, const std::string& binary, const std::vector<std::string>& args,
    const std::string& log_dir, absl::Duration timeout, const std::string& role) {
  const std::string out = absl::StrCat(log_dir, "/", name, ".out");
  const std::string log = absl::StrCat(log_dir, "/", name, ".log");
  const pid_t pid = Spawn(binary, args, out, log);
  if (pid < 0) {
    return absl::FailedPreconditionError(absl::StrCat("cannot start ", binary));
  }
  auto process = std::unique_ptr<ServiceProcess>(new ServiceProcess(name, pid, out, log));
  const std::regex listening(absl::StrCat(role.empty() ? "" : "(^|\n)" + role + " ",
                                          "listening grpc=([0-9]+) metrics=([0-9]+)"));
  const int group = role.empty() ? 1 : 2;
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    std::smatch m;
    const std::string text = ReadAll(out);
    if (std::regex_search(text, m, listening)) {
      process->port_ = std::stoi(m[group].str());
      process->metrics_port_ = std::stoi(m[group + 1].str());
      return process;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      process->stopped_ = true;
      return absl::FailedPreconditionError(absl::StrCat(
          name, " exited (status ", status, ") before serving; its log:\n", process->LogTail()));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::FailedPreconditionError(absl::StrCat(name, " did not serve within ",
                                                    absl::FormatDuration(timeout), "; its log:\n",
                                                    process->LogTail()));
}

ServiceProcess::~ServiceProcess() { Stop(); }

std::string ServiceProcess::LogTail(int lines) const {
  std::ifstream in(log_path_);
  std::deque<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(line);
    if (static_cast<int>(tail.size()) > lines) tail.pop_front();
  }
  std::string out;
  for (const std::string& line : tail) absl::StrAppend(&out, line, "\n");
  return out;
}

int ServiceProcess::Stop(absl::Duration grace) {
  if (stopped_ || pid_ < 0) return 0;
  stopped_ = true;
  kill(pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + grace;
  int status = 0;
  while (absl::Now() < deadline) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  return -1;
}

int RunToCompletion(const std::string& binary, const std::vector<std::string>& args,
                    const std::string& log) {
  const pid_t pid = Spawn(binary, args, log, log + ".err");
  if (pid < 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace twinspan::testing
