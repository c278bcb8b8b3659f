// End to end on the GPU: real twinspan-target, twinspan-drafter and twinspan-serve processes on
// 127.0.0.1 (ports they pick) over make-demo's random qwen3 target + DFlash2 drafter, the targets
// on the CUDA backend (--device cuda:0: logits sampled on the GPU, taps kept and fused there).
// The exactness contract across them: drafted == plain (greedy, sampled, top-k/top-p), split ==
// split with fused taps == in-process (twinspan-serve) == no drafter, concurrent == solo with 1,
// 2 and 4 streams, repeat == first, and drafted == plain under a grammar (structured output's
// masks applied on the device); token ids compared, not text.
//
// The drafter tries the same device first and falls back to the CPU when it refuses to start
// there (at this commit the CUDA backend does not forward the DFlash2 drafter's SelectorWalk); the
// test prints which device each process used.
//
// Environment: TWINSPAN_SERVICE_BIN_DIR, the folder holding twinspan-target, twinspan-drafter,
// twinspan-serve and make-demo (default: this binary's folder, then the build root two levels
// up); TWINSPAN_TEST_DEVICE, the targets' --device (default cuda:0; cpu runs the same checks on
// a machine without a GPU); TWINSPAN_TEST_LOG_DIR, where the processes' logs are kept (default:
// a temporary folder, removed unless TWINSPAN_KEEP_LOGS is set).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/service_process.h"
#include "twinspan/v1/serving.grpc.pb.h"

namespace twinspan {
namespace {

namespace fs = std::filesystem;
using testing::ServiceProcess;

std::string Env(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

std::string FindBinDir() {
  const std::string given = Env("TWINSPAN_SERVICE_BIN_DIR", "");
  if (!given.empty()) return given;
  const fs::path self = fs::read_symlink("/proc/self/exe").parent_path();
  for (const fs::path& dir : {self, self.parent_path().parent_path()}) {
    if (fs::exists(dir / "twinspan-target")) return dir.string();
  }
  return self.string();
}

struct Reply {
  grpc::Status status;
  std::vector<uint32_t> ids;
  v1::GenerateFinal final;
};

Reply Generate(v1::Serving::Stub& stub, const v1::GenerateRequest& request) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(300));
  std::unique_ptr<grpc::ClientReader<v1::GenerateResponse>> reader =
      stub.Generate(&context, request);
  Reply reply;
  v1::GenerateResponse response;
  while (reader->Read(&response)) {
    if (response.has_chunk()) {
      reply.ids.insert(reply.ids.end(), response.chunk().ids().begin(),
                       response.chunk().ids().end());
    } else if (response.has_final()) {
      reply.final = response.final();
    }
  }
  reply.status = reader->Finish();
  return reply;
}

v1::GenerateRequest Chat(const std::string& text, int max_tokens, float temperature,
                         int64_t seed = -1, bool draft = true) {
  v1::GenerateRequest r;
  v1::ChatMessage* m = r.mutable_chat()->add_messages();
  m->set_role("user");
  m->set_content(text);
  v1::SamplingParams* s = r.mutable_sampling();
  s->set_max_tokens(max_tokens);
  s->set_temperature(temperature);
  s->set_ignore_eos(true);
  if (seed >= 0) s->mutable_seed()->set_value(static_cast<uint64_t>(seed));
  s->mutable_draft()->set_value(draft);
  return r;
}

class ServicesCudaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    device_ = Env("TWINSPAN_TEST_DEVICE", "cuda:0");
    const std::string bins = FindBinDir();
    keep_logs_ =
        !Env("TWINSPAN_TEST_LOG_DIR", "").empty() || !Env("TWINSPAN_KEEP_LOGS", "").empty();
    std::string work_template = Env("TWINSPAN_TEST_LOG_DIR", "/tmp") + "/twinspan-services-XXXXXX";
    fs::create_directories(fs::path(work_template).parent_path());
    ASSERT_NE(mkdtemp(work_template.data()), nullptr) << work_template;
    work_ = work_template;
    models_ = work_ + "/models";
    const std::string make_demo = bins + "/make-demo";
    ASSERT_EQ(testing::RunToCompletion(make_demo, {"--out", models_}, work_ + "/make-demo.log"), 0)
        << make_demo << " failed; see " << work_ << "/make-demo.log*";
    const std::string target_dir = models_ + "/target", drafter_dir = models_ + "/drafter";
    const absl::Duration start = absl::Seconds(180);

    // The drafter on the targets' device when it can draft there, else on the CPU.
    std::vector<std::string> drafter_args = {
        "--model",  drafter_dir,   "--target-model", target_dir,    "--head-variant", "two-span",
        "--listen", "127.0.0.1:0", "--metrics",      "127.0.0.1:0", "--threads",      "2"};
    drafter_device_ = device_;
    auto args = drafter_args;
    args.insert(args.end(), {"--device", drafter_device_});
    auto drafter = ServiceProcess::Start("drafter", bins + "/twinspan-drafter", args, work_, start);
    if (!drafter.ok() && device_ != "cpu") {
      std::printf("drafter: --device %s refused (%s); running it on the CPU\n", device_.c_str(),
                  std::string(drafter.status().message().substr(0, 300)).c_str());
      drafter_device_ = "cpu";
      args = drafter_args;
      args.insert(args.end(), {"--device", "cpu"});
      drafter =
          ServiceProcess::Start("drafter-cpu", bins + "/twinspan-drafter", args, work_, start);
    }
    ASSERT_TRUE(drafter.ok()) << drafter.status();
    drafter_ = std::move(*drafter).release();
    std::printf("targets on %s, drafter on %s, logs in %s\n", device_.c_str(),
                drafter_device_.c_str(), work_.c_str());

    const std::vector<std::string> common = {"--model",
                                             target_dir,
                                             "--listen",
                                             "127.0.0.1:0",
                                             "--metrics",
                                             "127.0.0.1:0",
                                             "--parallel",
                                             "4",
                                             "--context",
                                             "1024",
                                             "--threads",
                                             "2",
                                             "--draft-timeout-ms",
                                             "10000",
                                             "--device",
                                             device_};
    auto start_one = [&](const char* name, const std::string& binary,
                         std::vector<std::string> extra) -> ServiceProcess* {
      std::vector<std::string> all = common;
      all.insert(all.end(), extra.begin(), extra.end());
      auto p = ServiceProcess::Start(name, bins + "/" + binary, all, work_, start);
      EXPECT_TRUE(p.ok()) << p.status();
      return p.ok() ? std::move(*p).release() : nullptr;
    };
    plain_ = start_one("target-plain", "twinspan-target", {"--name", "target-plain"});
    split_ = start_one("target-split", "twinspan-target",
                       {"--name", "target-split", "--drafter", drafter_->address()});
    fused_ = start_one(
        "target-fused", "twinspan-target",
        {"--name", "target-fused", "--drafter", drafter_->address(), "--fuse-taps", drafter_dir});
    serve_ = start_one(
        "serve", "twinspan-serve",
        {"--name", "serve", "--drafter-model", drafter_dir, "--drafter-device", drafter_device_});
  }

  static void TearDownTestSuite() {
    for (ServiceProcess* p : {serve_, fused_, split_, plain_, drafter_}) delete p;
    serve_ = fused_ = split_ = plain_ = drafter_ = nullptr;
    if (work_.empty()) return;
    fs::remove_all(models_);  // The logs stay when asked for (gpu-check.sh brings them back).
    if (!keep_logs_) fs::remove_all(work_);
  }

  void SetUp() override {
    for (ServiceProcess* p : {plain_, split_, fused_, serve_}) ASSERT_NE(p, nullptr);
    // Every drafted target has its drafter before a test starts.
    for (ServiceProcess* p : {split_, fused_, serve_}) {
      const absl::Time deadline = absl::Now() + absl::Seconds(60);
      while (!Info(*p).drafter_connected()) {
        ASSERT_LT(absl::Now(), deadline) << p->name() << " never connected:\n" << p->LogTail();
        absl::SleepFor(absl::Milliseconds(100));
      }
    }
  }

  static v1::Serving::Stub& Stub(const ServiceProcess& p) {
    static auto* stubs = new std::map<std::string, std::unique_ptr<v1::Serving::Stub>>();
    auto& stub = (*stubs)[p.address()];
    if (stub == nullptr) {
      stub = v1::Serving::NewStub(
          grpc::CreateChannel(p.address(), grpc::InsecureChannelCredentials()));
    }
    return *stub;
  }

  static v1::ModelInfoResponse Info(const ServiceProcess& p) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ModelInfoResponse info;
    const grpc::Status status = Stub(p).ModelInfo(&context, v1::ModelInfoRequest(), &info);
    EXPECT_TRUE(status.ok()) << p.name() << ": " << status.error_message();
    return info;
  }

  static Reply Run(const ServiceProcess& p, const v1::GenerateRequest& r) {
    Reply reply = Generate(Stub(p), r);
    EXPECT_TRUE(reply.status.ok()) << p.name() << ": " << reply.status.error_message() << "\n"
                                   << p.LogTail();
    return reply;
  }

  static inline std::string device_, drafter_device_, work_, models_;
  static inline bool keep_logs_ = false;
  static inline ServiceProcess *drafter_ = nullptr, *plain_ = nullptr, *split_ = nullptr,
                               *fused_ = nullptr, *serve_ = nullptr;
};

TEST_F(ServicesCudaTest, ModelInfoReportsTheDevice) {
  for (ServiceProcess* p : {plain_, split_, fused_, serve_}) {
    EXPECT_EQ(Info(*p).backend(), device_) << p->name();
  }
  EXPECT_FALSE(Info(*plain_).drafter_connected());
}

TEST_F(ServicesCudaTest, DraftedEqualsPlainSplitEqualsInProcessEqualsNoDrafter) {
  struct Case {
    float temperature;
    int64_t seed;
    int top_k;
    float top_p;
  };
  for (const Case& c :
       {Case{0.0f, -1, 0, 1.0f}, Case{0.8f, 7, 0, 1.0f}, Case{1.0f, 12345, 40, 0.9f}}) {
    SCOPED_TRACE(::testing::Message() << "temperature " << c.temperature << " seed " << c.seed);
    v1::GenerateRequest r = Chat("Tell me a story about a dragon.", 48, c.temperature, c.seed);
    r.mutable_sampling()->set_top_k(c.top_k);
    r.mutable_sampling()->set_top_p(c.top_p);
    const Reply want = Run(*plain_, r);
    ASSERT_EQ(want.ids.size(), 48u);
    EXPECT_EQ(want.final.drafted(), 0u);
    for (ServiceProcess* p : {split_, fused_, serve_}) {
      const Reply got = Run(*p, r);
      EXPECT_EQ(got.final.token_sha256(), want.final.token_sha256()) << p->name();
      EXPECT_EQ(got.ids, want.ids) << p->name();
      EXPECT_GT(got.final.drafted(), 0u) << p->name();
    }
    v1::GenerateRequest off = r;
    off.mutable_sampling()->mutable_draft()->set_value(false);
    const Reply plain_on_split = Run(*split_, off);
    EXPECT_EQ(plain_on_split.final.token_sha256(), want.final.token_sha256());
    EXPECT_EQ(plain_on_split.final.drafted(), 0u);
  }
}

TEST_F(ServicesCudaTest, DraftedEqualsPlainUnderAGrammarWithTheMaskOnTheDevice) {
  // Structured output: every row's logits are masked where they are (cuda::MaskLogits before the
  // device draw, the prefill's first token included), drafts the grammar refuses are cut.
  const std::string pattern = "(0|[1-9][0-9]{0,3})(, (0|[1-9][0-9]{0,3})){2,30}";
  for (const float temperature : {0.0f, 0.9f}) {
    SCOPED_TRACE(::testing::Message() << "temperature " << temperature);
    v1::GenerateRequest r = Chat("List some numbers.", 64, temperature, 11);
    r.mutable_sampling()->set_ignore_eos(false);  // the grammar ends the output
    r.mutable_structured_output()->set_regex(pattern);
    const Reply want = Run(*plain_, r);
    ASSERT_FALSE(want.ids.empty());
    for (ServiceProcess* p : {split_, fused_, serve_}) {
      const Reply got = Run(*p, r);
      EXPECT_EQ(got.final.token_sha256(), want.final.token_sha256()) << p->name();
      EXPECT_EQ(got.ids, want.ids) << p->name();
    }
    v1::GenerateRequest off = r;
    off.mutable_sampling()->mutable_draft()->set_value(false);
    EXPECT_EQ(Run(*split_, off).final.token_sha256(), want.final.token_sha256());
  }
}

TEST_F(ServicesCudaTest, ConcurrentEqualsSoloAndRepeatEqualsFirst) {
  const std::vector<std::string> prompts = {"hello, how are you today?",
                                            "what is the weather like?", "the quick brown fox",
                                            "please tell me a story"};
  std::vector<v1::GenerateRequest> requests;
  for (size_t i = 0; i < prompts.size(); ++i) {
    requests.push_back(Chat(prompts[i], 32, i % 2 == 1 ? 0.7f : 0.0f, static_cast<int64_t>(i)));
  }
  for (ServiceProcess* p : {split_, serve_}) {
    std::vector<std::string> solo;
    for (const auto& r : requests) solo.push_back(Run(*p, r).final.token_sha256());
    for (const size_t streams : {1u, 2u, 4u}) {
      std::vector<std::string> got(streams);
      std::vector<std::thread> threads;
      for (size_t i = 0; i < streams; ++i) {
        threads.emplace_back([&, i] { got[i] = Run(*p, requests[i]).final.token_sha256(); });
      }
      for (std::thread& t : threads) t.join();
      for (size_t i = 0; i < streams; ++i) {
        EXPECT_EQ(got[i], solo[i]) << p->name() << ", " << streams << " streams, request " << i;
      }
    }
    for (size_t i = 0; i < requests.size(); ++i) {
      EXPECT_EQ(Run(*p, requests[i]).final.token_sha256(), solo[i]) << p->name() << " repeat";
    }
  }
}

}  // namespace
}  // namespace twinspan
