// The startup checks of the security flags: each unusable certificate, key, CA or combination is
// refused with the flag and the file in the message, before gRPC would only log it.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "services/security/security_flags.h"
#include "services/security/tls_files.h"
#include "tests/testing/test_ca.h"

namespace twinspan::security {
namespace {

namespace fs = std::filesystem;
using twinspan::testing::TestCa;
using twinspan::testing::TestIdentity;

class TlsFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = (fs::temp_directory_path() / "twinspan-tls-XXXXXX").string();
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    dir_ = dir;
    auto ca = TestCa::Create(dir_, "test");
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *std::move(ca);
    auto server = ca_->Issue("server");
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *server;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string WriteFile(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  // The message of CheckServerTlsFiles, which must be InvalidArgument.
  std::string ServerError(const ServerTlsFiles& files) {
    const absl::Status status = CheckServerTlsFiles(files);
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
    return std::string(status.message());
  }

  std::string dir_;
  std::unique_ptr<TestCa> ca_;
  TestIdentity server_;
};

TEST_F(TlsFilesTest, GoodFilesAndPlaintextPass) {
  EXPECT_TRUE(CheckServerTlsFiles({}).ok());
  EXPECT_TRUE(CheckServerTlsFiles({server_.cert_file, server_.key_file, ca_->cert_file()}).ok());
  EXPECT_TRUE(CheckClientTlsFiles({}).ok());
  ClientTlsFiles client;
  client.ca_file = ca_->cert_file();
  EXPECT_TRUE(CheckClientTlsFiles(client).ok());
  client.cert_file = server_.cert_file;
  client.key_file = server_.key_file;
  EXPECT_TRUE(CheckClientTlsFiles(client).ok());
}

TEST_F(TlsFilesTest, EachBadFileIsNamedWithItsFlag) {
  const std::string missing = dir_ + "/missing.pem";
  EXPECT_EQ(ServerError({missing, server_.key_file}), "--tls-cert " + missing + ": cannot be read");
  const std::string garbage = WriteFile("garbage.pem", "not a certificate\n");
  EXPECT_NE(ServerError({garbage, server_.key_file})
                .find("--tls-cert " + garbage + ": holds no PEM certificate"),
            std::string::npos);
  EXPECT_NE(ServerError({server_.cert_file, garbage})
                .find("--tls-key " + garbage + ": holds no unencrypted PEM private key"),
            std::string::npos);
  EXPECT_NE(ServerError({server_.cert_file, server_.key_file, garbage}).find("--tls-ca " + garbage),
            std::string::npos);
  auto other = ca_->Issue("other");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(ServerError({server_.cert_file, other->key_file})
                .find("--tls-key " + other->key_file +
                      ": is not the key of the certificate in "
                      "--tls-cert " +
                      server_.cert_file),
            std::string::npos);
}

TEST_F(TlsFilesTest, ExpiredAndNotYetValidCertificatesAreRefused) {
  auto expired = ca_->Issue("expired", absl::Hours(-48), absl::Hours(-1));
  ASSERT_TRUE(expired.ok());
  EXPECT_NE(ServerError({expired->cert_file, expired->key_file}).find("has expired"),
            std::string::npos);
  auto future = ca_->Issue("future", absl::Hours(1), absl::Hours(48));
  ASSERT_TRUE(future.ok());
  EXPECT_NE(ServerError({future->cert_file, future->key_file}).find("not valid yet"),
            std::string::npos);
}

TEST_F(TlsFilesTest, CombinationsThatCannotWorkAreRefused) {
  EXPECT_NE(ServerError({server_.cert_file, ""}).find("--tls-cert and --tls-key go together"),
            std::string::npos);
  EXPECT_NE(ServerError({"", "", ca_->cert_file()}).find("--tls-ca needs --tls-cert"),
            std::string::npos);
  ClientTlsFiles name_only;
  name_only.server_name = "localhost";
  EXPECT_TRUE(absl::IsInvalidArgument(CheckClientTlsFiles(name_only)));
  ClientTlsFiles key_only;
  key_only.key_file = server_.key_file;
  EXPECT_TRUE(absl::IsInvalidArgument(CheckClientTlsFiles(key_only)));

  const std::string tokens = WriteFile("tokens", "t0ken\n");
  SecurityFlags plaintext_tokens;
  plaintext_tokens.auth_token_file = tokens;
  const absl::Status in_clear = OpenSecurity(plaintext_tokens).status();
  EXPECT_TRUE(absl::IsInvalidArgument(in_clear));
  EXPECT_NE(in_clear.message().find("--auth-token-file needs --tls-cert"), std::string::npos)
      << in_clear;
  SecurityFlags exempt_without_tokens;
  exempt_without_tokens.auth_exempt_health_metrics = true;
  EXPECT_TRUE(absl::IsInvalidArgument(OpenSecurity(exempt_without_tokens).status()));
  SecurityFlags fast_reload;
  fast_reload.tls = {server_.cert_file, server_.key_file};
  fast_reload.tls_reload_seconds = 0.1;
  EXPECT_TRUE(absl::IsInvalidArgument(OpenSecurity(fast_reload).status()));

  SecurityFlags good;
  good.tls = {server_.cert_file, server_.key_file, ca_->cert_file()};
  good.auth_token_file = tokens;
  absl::StatusOr<ProcessSecurity> opened = OpenSecurity(good);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_NE(opened->server_credentials, nullptr);
  EXPECT_NE(opened->metrics_auth(), nullptr);
  EXPECT_FALSE(opened->upstream.tls());
}

}  // namespace
}  // namespace twinspan::security
