// Transport security end to end with real processes and a CA made here: mutual TLS between
// router, target and drafter, bearer tokens on the router's public port (and its health and
// /metrics), wrong certificates refused on every hop, and certificates and tokens rotated under
// running processes.
//
// Environment: TWINSPAN_SERVICE_BIN_DIR (see tests/testing/loopback.h); TWINSPAN_KEEP_LOGS keeps
// the logs and certificates.
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/loopback.h"
#include "tests/testing/service_process.h"
#include "tests/testing/test_ca.h"
#include "twinspan/v1/serving.grpc.pb.h"

namespace twinspan {
namespace {

namespace fs = std::filesystem;
using testing::HttpGet;
using testing::ServiceProcess;
using testing::TestCa;
using testing::TestIdentity;
using testing::WaitFor;

constexpr char kToken[] = "s3cret-token";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes `text` to `path` the way a rotation does: a new file renamed over the old one.
void Replace(const std::string& path, const std::string& text) {
  std::ofstream(path + ".new", std::ios::binary) << text;
  fs::rename(path + ".new", path);
}

// What a test client dials with.
struct ClientSecurity {
  std::string ca_file;  // empty: plaintext
  const TestIdentity* identity = nullptr;
  std::string token;  // empty: no authorization header
};

class SecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string work = (fs::temp_directory_path() / "twinspan-security-XXXXXX").string();
    ASSERT_NE(mkdtemp(work.data()), nullptr);
    work_ = new std::string(work);
    ASSERT_EQ(testing::RunToCompletion(Bin("make-demo"), {"--out", work + "/models"},
                                       work + "/make-demo.log"),
              0)
        << "make-demo failed; see " << work << "/make-demo.log";
  }
  static void TearDownTestSuite() {
    if (std::getenv("TWINSPAN_KEEP_LOGS") == nullptr) fs::remove_all(*work_);
    delete work_;
  }

  void SetUp() override {
    dir_ = *work_ + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::create_directories(dir_);
    auto cluster = TestCa::Create(dir_, "cluster");
    auto rogue = TestCa::Create(dir_, "rogue");
    ASSERT_TRUE(cluster.ok() && rogue.ok());
    cluster_ = *std::move(cluster);
    rogue_ = *std::move(rogue);
    for (const char* name : {"drafter", "target", "router", "client"}) {
      auto identity = cluster_->Issue(name);
      ASSERT_TRUE(identity.ok()) << identity.status();
      ids_[name] = *identity;
    }
    auto impostor = rogue_->Issue("impostor");
    ASSERT_TRUE(impostor.ok());
    impostor_ = *impostor;
    tokens_ = dir_ + "/tokens";
    Replace(tokens_, absl::StrCat(kToken, "\n"));
  }

  static std::string Bin(const std::string& name) {
    return testing::FindServiceBinDir() + "/" + name;
  }
  std::string Models(const std::string& which) const { return *work_ + "/models/" + which; }

  std::unique_ptr<ServiceProcess> Start(const std::string& name, const std::string& binary,
                                        const std::vector<std::string>& args) {
    auto p = ServiceProcess::Start(name, Bin(binary), args, dir_, absl::Seconds(120));
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *std::move(p) : nullptr;
  }

  // A drafter serving mutual TLS to targets of the cluster CA.
  std::unique_ptr<ServiceProcess> StartDrafter() {
    return Start("drafter", "twinspan-drafter",
                 {"--model", Models("drafter"), "--target-model", Models("target"), "--listen",
                  "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--threads", "1", "--tls-cert",
                  ids_["drafter"].cert_file, "--tls-key", ids_["drafter"].key_file, "--tls-ca",
                  cluster_->cert_file()});
  }

  std::vector<std::string> TargetArgs(const std::string& drafter) const {
    std::vector<std::string> args = {"--model",
                                     Models("target"),
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--metrics",
                                     "127.0.0.1:0",
                                     "--threads",
                                     "1",
                                     "--context",
                                     "512",
                                     "--parallel",
                                     "2",
                                     "--draft-timeout-ms",
                                     "5000",
                                     "--tls-reload-seconds",
                                     "1"};
    if (!drafter.empty()) args.insert(args.end(), {"--drafter", drafter});
    return args;
  }

  std::shared_ptr<grpc::Channel> Dial(const std::string& address, const ClientSecurity& s) {
    if (s.ca_file.empty()) return grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadFile(s.ca_file);
    if (s.identity != nullptr) {
      ssl.pem_cert_chain = ReadFile(s.identity->cert_file);
      ssl.pem_private_key = ReadFile(s.identity->key_file);
    }
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);  // a fresh handshake for every channel
    return grpc::CreateCustomChannel(address, grpc::SslCredentials(ssl), args);
  }

  static void Prepare(grpc::ClientContext* context, const ClientSecurity& s) {
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (!s.token.empty()) context->AddMetadata("authorization", "Bearer " + s.token);
  }

  grpc::Status ModelInfo(const std::string& address, const ClientSecurity& s,
                         v1::ModelInfoResponse* info = nullptr) {
    v1::ModelInfoResponse ignored;
    grpc::ClientContext context;
    Prepare(&context, s);
    return v1::Serving::NewStub(Dial(address, s))
        ->ModelInfo(&context, v1::ModelInfoRequest(), info != nullptr ? info : &ignored);
  }

  // grpc.health.v1.Health/Check of the whole server, by raw bytes (no health stubs in Debian).
  grpc::Status HealthCheck(const std::string& address, const ClientSecurity& s) {
    grpc::GenericStub stub(Dial(address, s));
    grpc::ClientContext context;
    Prepare(&context, s);
    grpc::Slice empty("", 0);
    grpc::ByteBuffer request(&empty, 1), response;
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
    grpc::Status status;
    stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                   &response, [&](grpc::Status s2) {
                     std::lock_guard<std::mutex> lock(mu);
                     status = std::move(s2);
                     done = true;
                     done_cv.notify_all();
                   });
    std::unique_lock<std::mutex> lock(mu);
    done_cv.wait(lock, [&] { return done; });
    return status;
  }

  // A greedy Generate; its final message, or the call's error.
  absl::StatusOr<v1::GenerateFinal> Generate(const std::string& address, const ClientSecurity& s,
                                             bool draft) {
    v1::GenerateRequest r;
    r.set_prompt("def secure():");
    r.mutable_sampling()->set_max_tokens(16);
    r.mutable_sampling()->set_ignore_eos(true);
    r.mutable_sampling()->mutable_draft()->set_value(draft);
    grpc::ClientContext context;
    Prepare(&context, s);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    auto reader = v1::Serving::NewStub(Dial(address, s))->Generate(&context, r);
    v1::GenerateResponse response;
    v1::GenerateFinal final;
    while (reader->Read(&response)) {
      if (response.has_final()) final = response.final();
    }
    const grpc::Status status = reader->Finish();
    if (!status.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          status.error_message());
    }
    return final;
  }

  static std::string* work_;
  std::string dir_, tokens_;
  std::unique_ptr<TestCa> cluster_, rogue_;
  std::map<std::string, TestIdentity> ids_;
  TestIdentity impostor_;
};

std::string* SecurityTest::work_ = nullptr;

TEST_F(SecurityTest, MutualTlsBetweenAllThreeAndATokenOnThePublicPort) {
  auto drafter = StartDrafter();
  ASSERT_NE(drafter, nullptr);
  std::vector<std::string> target_args = TargetArgs(drafter->address());
  target_args.insert(
      target_args.end(),
      {"--tls-cert", ids_["target"].cert_file, "--tls-key", ids_["target"].key_file, "--tls-ca",
       cluster_->cert_file(), "--upstream-tls-ca", cluster_->cert_file(), "--upstream-tls-cert",
       ids_["target"].cert_file, "--upstream-tls-key", ids_["target"].key_file});
  auto target = Start("target", "twinspan-target", target_args);
  ASSERT_NE(target, nullptr);
  const nlohmann::json config = {
      {"pools", {{{"variant", "two-span"}, {"weight", 1}, {"workers", {target->address()}}}}},
      {"health_interval_ms", 100}};
  std::ofstream(dir_ + "/router.json") << config.dump();
  auto router = Start("router", "twinspan-router",
                      {"--config", dir_ + "/router.json", "--listen", "127.0.0.1:0", "--metrics",
                       "127.0.0.1:0", "--tls-cert", ids_["router"].cert_file, "--tls-key",
                       ids_["router"].key_file, "--auth-token-file", tokens_, "--upstream-tls-ca",
                       cluster_->cert_file(), "--upstream-tls-cert", ids_["router"].cert_file,
                       "--upstream-tls-key", ids_["router"].key_file});
  ASSERT_NE(router, nullptr);

  // A client of the public port: trusts the cluster CA, presents the token, no certificate.
  const ClientSecurity user{cluster_->cert_file(), nullptr, kToken};
  const ClientSecurity member{cluster_->cert_file(), &ids_["client"], ""};
  ASSERT_TRUE(WaitFor(
      [&] {
        v1::ModelInfoResponse info;
        return ModelInfo(target->address(), member, &info).ok() && info.drafter_connected();
      },
      absl::Seconds(60)))
      << "the target never reached its drafter over mutual TLS:\n"
      << target->LogTail();
  ASSERT_TRUE(WaitFor(
      [&] {
        v1::GetLoadResponse load;
        grpc::ClientContext context;
        Prepare(&context, user);
        return v1::Serving::NewStub(Dial(router->address(), user))
                   ->GetLoad(&context, v1::GetLoadRequest(), &load)
                   .ok() &&
               load.max_parallel() == 1;  // the router counts healthy workers
      },
      absl::Seconds(30)))
      << "the router never saw its worker over mutual TLS:\n"
      << router->LogTail();
  absl::StatusOr<v1::GenerateFinal> drafted = Generate(router->address(), user, true);
  absl::StatusOr<v1::GenerateFinal> plain = Generate(router->address(), user, false);
  ASSERT_TRUE(drafted.ok() && plain.ok()) << drafted.status() << plain.status();
  EXPECT_EQ(drafted->token_sha256(), plain->token_sha256());
  EXPECT_GT(drafted->drafted(), 0u) << "no drafts crossed the target's mutual TLS link";
  EXPECT_EQ(drafted->served_by(), target->address());

  // The token: missing and wrong get the same answer, which names nothing; health too.
  for (const std::string token : {"", "wrong", "s3cret-toke"}) {
    const ClientSecurity stranger{cluster_->cert_file(), nullptr, token};
    const grpc::Status info = ModelInfo(router->address(), stranger);
    EXPECT_EQ(info.error_code(), grpc::StatusCode::UNAUTHENTICATED) << token;
    EXPECT_EQ(info.error_message(), "authentication required") << token;
    absl::StatusOr<v1::GenerateFinal> refused = Generate(router->address(), stranger, true);
    EXPECT_TRUE(absl::IsUnauthenticated(refused.status())) << refused.status();
    EXPECT_EQ(HealthCheck(router->address(), stranger).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  EXPECT_TRUE(HealthCheck(router->address(), user).ok());
  EXPECT_EQ(HttpGet(router->metrics_port(), "/metrics").status, 401);
  EXPECT_EQ(HttpGet(router->metrics_port(), "/metrics", "Authorization: Bearer wrong\r\n").status,
            401);
  const testing::HttpResponse scrape = HttpGet(
      router->metrics_port(), "/metrics", absl::StrCat("Authorization: Bearer ", kToken, "\r\n"));
  EXPECT_EQ(scrape.status, 200);
  EXPECT_NE(scrape.body.find("twinspan_router_requests_total"), std::string::npos);

  // Wrong certificates, on each side of each hop.
  const ClientSecurity plaintext{"", nullptr, kToken};
  EXPECT_EQ(ModelInfo(router->address(), plaintext).error_code(), grpc::StatusCode::UNAVAILABLE);
  const ClientSecurity trusts_rogue{rogue_->cert_file(), nullptr, kToken};
  EXPECT_EQ(ModelInfo(router->address(), trusts_rogue).error_code(), grpc::StatusCode::UNAVAILABLE);
  const ClientSecurity no_certificate{cluster_->cert_file(), nullptr, ""};
  EXPECT_EQ(ModelInfo(target->address(), no_certificate).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  const ClientSecurity impostor{cluster_->cert_file(), &impostor_, ""};
  EXPECT_EQ(ModelInfo(target->address(), impostor).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ModelInfo(drafter->address(), impostor).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(ModelInfo(target->address(), member).ok());
}

TEST_F(SecurityTest, ATargetWithAnotherCasCertificateGetsNoDraftsAndLosesNoRequest) {
  auto drafter = StartDrafter();
  ASSERT_NE(drafter, nullptr);
  std::vector<std::string> args = TargetArgs(drafter->address());
  args.insert(args.end(), {"--upstream-tls-ca", cluster_->cert_file(), "--upstream-tls-cert",
                           impostor_.cert_file, "--upstream-tls-key", impostor_.key_file});
  auto target = Start("target", "twinspan-target", args);
  ASSERT_NE(target, nullptr);
  const ClientSecurity plaintext;
  absl::SleepFor(absl::Seconds(3));  // six connection attempts
  v1::ModelInfoResponse info;
  ASSERT_TRUE(ModelInfo(target->address(), plaintext, &info).ok());
  EXPECT_FALSE(info.drafter_connected()) << "the drafter accepted a certificate of another CA";
  absl::StatusOr<v1::GenerateFinal> served = Generate(target->address(), plaintext, true);
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_EQ(served->drafted(), 0u);
}

TEST_F(SecurityTest, CertificatesAndTokensRotateUnderARunningTarget) {
  const std::string cert = dir_ + "/serving.pem", key = dir_ + "/serving.key";
  fs::copy_file(ids_["target"].cert_file, cert);
  fs::copy_file(ids_["target"].key_file, key);
  std::vector<std::string> args = TargetArgs("");
  args.insert(args.end(), {"--tls-cert", cert, "--tls-key", key, "--auth-token-file", tokens_,
                           "--auth-exempt-health-metrics"});
  auto target = Start("target", "twinspan-target", args);
  ASSERT_NE(target, nullptr);
  const ClientSecurity old_trust{cluster_->cert_file(), nullptr, kToken};
  const ClientSecurity new_trust{rogue_->cert_file(), nullptr, kToken};
  ASSERT_TRUE(ModelInfo(target->address(), old_trust).ok());
  EXPECT_EQ(ModelInfo(target->address(), new_trust).error_code(), grpc::StatusCode::UNAVAILABLE);

  // Exempt: health and /metrics answer without a token; the API still needs it.
  const ClientSecurity no_token{cluster_->cert_file(), nullptr, ""};
  EXPECT_TRUE(HealthCheck(target->address(), no_token).ok());
  EXPECT_EQ(HttpGet(target->metrics_port(), "/metrics").status, 200);
  EXPECT_EQ(ModelInfo(target->address(), no_token).error_code(), grpc::StatusCode::UNAUTHENTICATED);

  // The certificate of another CA replaces the served one (key first, as a rotation would).
  Replace(key, ReadFile(impostor_.key_file));
  Replace(cert, ReadFile(impostor_.cert_file));
  EXPECT_TRUE(
      WaitFor([&] { return ModelInfo(target->address(), new_trust).ok(); }, absl::Seconds(10)))
      << "the new certificate was not picked up:\n"
      << target->LogTail();
  EXPECT_EQ(ModelInfo(target->address(), old_trust).error_code(), grpc::StatusCode::UNAVAILABLE);

  // A new token replaces the old one.
  Replace(tokens_, "n3w-token\n");
  const ClientSecurity new_token{rogue_->cert_file(), nullptr, "n3w-token"};
  EXPECT_TRUE(
      WaitFor([&] { return ModelInfo(target->address(), new_token).ok(); }, absl::Seconds(10)));
  EXPECT_EQ(ModelInfo(target->address(), new_trust).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(target->LogTail(200).find("auth: reloaded " + tokens_), std::string::npos);
}

TEST_F(SecurityTest, UnusableSecurityFlagsStopTheProcessNamingTheFlag) {
  auto other = cluster_->Issue("other");
  ASSERT_TRUE(other.ok());
  const struct {
    std::string binary;
    std::vector<std::string> args;
    std::string want;
  } runs[] = {
      {"twinspan-target", {"--auth-token-file", tokens_}, "--auth-token-file needs --tls-cert"},
      {"twinspan-target",
       {"--tls-cert", ids_["target"].cert_file, "--tls-key", other->key_file},
       "--tls-key " + other->key_file + ": is not the key of the certificate"},
      {"twinspan-drafter",
       {"--target-model", Models("target"), "--tls-cert", dir_ + "/missing.pem", "--tls-key",
        ids_["drafter"].key_file},
       "--tls-cert " + dir_ + "/missing.pem: cannot be read"},
      {"twinspan-serve",
       {"--tls-cert", ids_["target"].cert_file, "--tls-key", ids_["target"].key_file,
        "--auth-token-file", dir_ + "/no-tokens"},
       "--auth-token-file " + dir_ + "/no-tokens: cannot be read"},
  };
  for (const auto& run : runs) {
    std::vector<std::string> args = {
        "--model", Models(run.binary == "twinspan-drafter" ? "drafter" : "target"), "--listen",
        "127.0.0.1:0"};
    args.insert(args.end(), run.args.begin(), run.args.end());
    const std::string log = dir_ + "/refused.log";
    EXPECT_EQ(testing::RunToCompletion(Bin(run.binary), args, log), 1) << run.want;
    const std::string text = ReadFile(log + ".err");
    EXPECT_NE(text.find("INVALID_ARGUMENT"), std::string::npos) << text;
    EXPECT_NE(text.find(run.want), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace twinspan
