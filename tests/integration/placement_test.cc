// The router's placement end to end: twinspan-router starts a drafter and a target itself from its
// config's `launch` entries, serves drafted == plain through them, starts a launched child again
// when it dies, and stops every child on SIGTERM (checked by process id).
//
// Environment: TWINSPAN_SERVICE_BIN_DIR, the folder holding the service binaries and make-demo
// (default: this binary's folder, then the build root two levels up); TWINSPAN_PLACEMENT_GPUS,
// the drafter's and the target's "gpu" ("0,0": both on GPU 0, "0,1": one each; unset: both on the
// CPU, as in CI); TWINSPAN_TEST_LOG_DIR keeps the logs there.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/loopback.h"
#include "tests/testing/service_process.h"
#include "twinspan/v1/serving.grpc.pb.h"

namespace twinspan {
namespace {

namespace fs = std::filesystem;
using testing::FreePort;
using testing::HttpGet;
using testing::ServiceProcess;
using testing::WaitFor;

std::string Env(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The first word of a live process's command line ("" once it is gone or a zombie).
std::string ProgramOf(pid_t pid) {
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || stat.compare(paren + 2, 1, "Z") == 0) return "";
  const std::string cmdline = ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
  return cmdline.substr(0, cmdline.find('\0'));
}

// The live children of `parent` that run `program`.
std::vector<pid_t> ChildrenRunning(pid_t parent, const std::string& program) {
  std::vector<pid_t> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = ReadFile(entry.path() / "stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::vector<std::string> fields = absl::StrSplit(stat.substr(paren + 2), ' ');
    if (fields.size() < 2 || fields[1] != std::to_string(parent)) continue;
    const pid_t pid = std::stoi(name);
    if (ProgramOf(pid) == program) out.push_back(pid);
  }
  return out;
}

class PlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bins_ = testing::FindServiceBinDir();
    gpus_ = absl::StrSplit(Env("TWINSPAN_PLACEMENT_GPUS", ""), ',', absl::SkipEmpty());
    ASSERT_TRUE(gpus_.empty() || gpus_.size() == 2)
        << "TWINSPAN_PLACEMENT_GPUS names the drafter's and the target's GPU, e.g. 0,0";
    std::string work = Env("TWINSPAN_TEST_LOG_DIR", "/tmp") + "/twinspan-placement-XXXXXX";
    fs::create_directories(fs::path(work).parent_path());
    ASSERT_NE(mkdtemp(work.data()), nullptr) << work;
    work_ = work;
    keep_ = !Env("TWINSPAN_TEST_LOG_DIR", "").empty() || !Env("TWINSPAN_KEEP_LOGS", "").empty();
    ASSERT_EQ(testing::RunToCompletion(bins_ + "/make-demo", {"--out", work_ + "/models"},
                                       work_ + "/make-demo.log"),
              0)
        << "make-demo failed; see " << work_ << "/make-demo.log";
  }

  void TearDown() override {
    router_.reset();
    fs::remove_all(work_ + "/models");
    if (!keep_) fs::remove_all(work_);
  }

  std::string Bin(const std::string& name) const { return bins_ + "/" + name; }

  // One pool whose drafter and target the router launches itself.
  std::string WriteConfig() {
    const std::string models = work_ + "/models";
    const std::string drafter_at = absl::StrCat("127.0.0.1:", FreePort());
    worker_ = absl::StrCat("127.0.0.1:", FreePort());
    nlohmann::json drafter = {
        {"name", "drafter"},
        {"binary", Bin("twinspan-drafter")},
        {"args",
         {"--model", models + "/drafter", "--target-model", models + "/target", "--head-variant",
          "two-span", "--listen", drafter_at, "--metrics", "127.0.0.1:0", "--threads", "1"}}};
    nlohmann::json target = {
        {"name", "target"},
        {"binary", Bin("twinspan-target")},
        {"args",
         {"--model", models + "/target", "--drafter", drafter_at, "--listen", worker_, "--metrics",
          "127.0.0.1:0", "--name", "target", "--threads", "1", "--context", "1024", "--parallel",
          "2", "--draft-timeout-ms", "5000"}}};
    if (!gpus_.empty()) {
      drafter["gpu"] = gpus_[0];
      target["gpu"] = gpus_[1];
    }
    nlohmann::json config = {{"pools",
                              {{{"variant", "two-span"},
                                {"weight", 1},
                                {"workers", {worker_}},
                                {"launch", {drafter, target}}}}},
                             {"health_interval_ms", 100},
                             {"startup_timeout_s", 180}};
    std::string path = work_ + "/router.json";
    std::ofstream(path) << config.dump(2);
    return path;
  }

  v1::ModelInfoResponse Info() {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ModelInfoResponse info;
    const grpc::Status status = stub_->ModelInfo(&context, v1::ModelInfoRequest(), &info);
    EXPECT_TRUE(status.ok()) << "ModelInfo: " << status.error_message();
    return info;
  }

  v1::GetLoadResponse Load() {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::GetLoadResponse load;
    const grpc::Status status = stub_->GetLoad(&context, v1::GetLoadRequest(), &load);
    EXPECT_TRUE(status.ok()) << "GetLoad: " << status.error_message();
    return load;
  }

  v1::GenerateFinal Generate(bool draft) {
    v1::GenerateRequest r;
    v1::ChatMessage* m = r.mutable_chat()->add_messages();
    m->set_role("user");
    m->set_content("def placement():");
    r.mutable_sampling()->set_max_tokens(24);
    r.mutable_sampling()->set_temperature(0);
    r.mutable_sampling()->set_ignore_eos(true);
    r.mutable_sampling()->mutable_draft()->set_value(draft);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    auto reader = stub_->Generate(&context, r);
    v1::GenerateResponse response;
    v1::GenerateFinal final;
    while (reader->Read(&response)) {
      if (response.has_final()) final = response.final();
    }
    const grpc::Status status = reader->Finish();
    EXPECT_TRUE(status.ok()) << status.error_message() << "\n" << router_->LogTail();
    return final;
  }

  // Through the router, once the target has its drafter: the drafted tokens are the plain ones.
  void ExpectDraftedEqualsPlain() {
    ASSERT_TRUE(WaitFor([&] { return Info().drafter_connected(); }, absl::Seconds(60)))
        << "the target never connected to its drafter:\n"
        << router_->LogTail();
    const v1::GenerateFinal drafted = Generate(true), plain = Generate(false);
    EXPECT_EQ(drafted.token_sha256(), plain.token_sha256());
    EXPECT_FALSE(drafted.token_sha256().empty());
    EXPECT_EQ(drafted.head_variant(), "two-span");
    EXPECT_GT(drafted.drafted(), 0u) << "no drafts reached the target";
    EXPECT_EQ(plain.drafted(), 0u);
  }

  // twinspan_router_process_restarts_total{process=...} on the router's /metrics.
  double Restarts(const std::string& process) {
    const std::string text = HttpGet(router_->metrics_port(), "/metrics").body;
    const std::string key = absl::StrCat("process=\"", process, "\"");
    double total = 0;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (absl::StartsWith(line, "twinspan_router_process_restarts_total{") &&
          absl::StrContains(line, key)) {
        total += std::stod(std::string(line.substr(line.rfind(' ') + 1)));
      }
    }
    return total;
  }

  std::string bins_, work_, worker_;
  std::vector<std::string> gpus_;
  bool keep_ = false;
  std::unique_ptr<ServiceProcess> router_;
  std::unique_ptr<v1::Serving::Stub> stub_;
};

TEST_F(PlacementTest, LaunchedWorkersServeRestartAndStopWithTheRouter) {
  const std::string config = WriteConfig();
  // The router prints its ports only once every launched worker passed a health check.
  auto router = ServiceProcess::Start(
      "router", Bin("twinspan-router"),
      {"--config", config, "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0"}, work_,
      absl::Seconds(240), "router");
  ASSERT_TRUE(router.ok()) << router.status();
  router_ = *std::move(router);
  stub_ = v1::Serving::NewStub(
      grpc::CreateChannel(router_->address(), grpc::InsecureChannelCredentials()));

  const std::map<std::string, std::string> programs = {{"drafter", Bin("twinspan-drafter")},
                                                       {"target", Bin("twinspan-target")}};
  std::map<pid_t, std::string> seen;  // every child the router ever ran
  std::map<std::string, pid_t> current;
  for (const auto& [name, program] : programs) {
    const std::vector<pid_t> pids = ChildrenRunning(router_->pid(), program);
    ASSERT_EQ(pids.size(), 1u) << name << " is not one child of the router";
    current[name] = pids[0];
    seen[pids[0]] = program;
  }
  for (size_t i = 0; i < gpus_.size(); ++i) {
    const pid_t pid = current[i == 0 ? "drafter" : "target"];
    const std::string env = ReadFile(absl::StrCat("/proc/", pid, "/environ"));
    const std::vector<std::string> vars = absl::StrSplit(env, '\0');
    EXPECT_NE(std::find(vars.begin(), vars.end(), "CUDA_VISIBLE_DEVICES=" + gpus_[i]), vars.end())
        << "pid " << pid << " was not given GPU " << gpus_[i];
  }
  const std::string want_backend = gpus_.empty() ? "cpu" : "cuda:0";
  EXPECT_EQ(Info().backend(), want_backend);
  ExpectDraftedEqualsPlain();

  // A launched child that dies is started again; the router routes to the target once healthy.
  for (const std::string name : {"target", "drafter"}) {
    const pid_t old = current[name];
    ASSERT_EQ(kill(old, SIGKILL), 0);
    if (name == "drafter") {  // the target sees its link drop before the new drafter is up
      ASSERT_TRUE(WaitFor([&] { return !Info().drafter_connected(); }, absl::Seconds(30)));
    }
    std::vector<pid_t> fresh;
    ASSERT_TRUE(WaitFor(
        [&] {
          fresh = ChildrenRunning(router_->pid(), programs.at(name));
          return fresh.size() == 1 && fresh[0] != old;
        },
        absl::Seconds(60)))
        << name << " was not started again:\n"
        << router_->LogTail();
    current[name] = fresh[0];
    seen[fresh[0]] = programs.at(name);
    EXPECT_TRUE(WaitFor([&] { return Restarts(name) == 1; }, absl::Seconds(10)))
        << "twinspan_router_process_restarts_total{process=\"" << name << "\"} is not 1";
    ASSERT_TRUE(WaitFor([&] { return Load().max_parallel() == 1; }, absl::Seconds(120)))
        << "the router never saw the target healthy again:\n"
        << router_->LogTail();
    ExpectDraftedEqualsPlain();
  }
  const std::string log = router_->LogTail(400);
  EXPECT_NE(log.find(absl::StrCat("worker ", worker_, " (two-span) is unhealthy")),
            std::string::npos)
      << log;
  for (const std::string name : {"target", "drafter"}) {
    EXPECT_NE(log.find(absl::StrCat("router: ", name, " (pid ")), std::string::npos) << log;
  }

  // SIGTERM: the router drains, stops its children and exits 0; no child outlives it.
  EXPECT_EQ(router_->Stop(absl::Seconds(90)), 0) << router_->LogTail();
  for (const auto& [pid, program] : seen) {
    EXPECT_NE(ProgramOf(pid), program) << program << " (pid " << pid << ") outlived the router";
  }
}

}  // namespace
}  // namespace twinspan
