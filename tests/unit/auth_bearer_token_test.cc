// BearerTokenAuth: the token file's format, the header's scheme, one message for every refusal,
// and a file changed under a running check.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/auth/bearer_token_auth.h"
#include "gtest/gtest.h"

namespace twinspan::auth {
namespace {

namespace fs = std::filesystem;

class BearerTokenAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = (fs::temp_directory_path() / "twinspan-auth-XXXXXX").string();
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    dir_ = dir;
    path_ = dir_ + "/tokens";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Replaces the file as a rotation does: a new file renamed over the old one.
  void Write(const std::string& text) {
    const std::string tmp = path_ + ".new";
    std::ofstream(tmp, std::ios::binary) << text;
    fs::rename(tmp, path_);
  }

  std::unique_ptr<BearerTokenAuth> Open(absl::Duration reload = absl::ZeroDuration()) {
    BearerTokenOptions options;
    options.token_file = path_;
    options.reload_interval = reload;
    absl::StatusOr<std::unique_ptr<BearerTokenAuth>> auth = BearerTokenAuth::Open(options);
    EXPECT_TRUE(auth.ok()) << auth.status();
    return auth.ok() ? *std::move(auth) : nullptr;
  }

  std::string dir_, path_;
};

TEST_F(BearerTokenAuthTest, AcceptsEveryTokenOfTheFileWithTheBearerSchemeInAnyCase) {
  Write("# rotation: old and new\n  old-token_1.~+/=  \n\nnew-token\n");
  auto auth = Open();
  ASSERT_NE(auth, nullptr);
  EXPECT_EQ(auth->token_count(), 2);
  EXPECT_TRUE(auth->Check("Bearer old-token_1.~+/=").ok());
  EXPECT_TRUE(auth->Check("Bearer new-token").ok());
  EXPECT_TRUE(auth->Check("bearer new-token").ok());
  EXPECT_TRUE(auth->Check("BEARER   new-token").ok());
}

TEST_F(BearerTokenAuthTest, RefusesAnythingElseWithOneMessageThatNamesNothing) {
  Write("s3cret\n");
  auto auth = Open();
  ASSERT_NE(auth, nullptr);
  for (const char* header :
       {"", "s3cret", "Bearer", "Bearer ", "Bearer s3cre", "Bearer s3cret2", "Bearer S3CRET",
        "Basic s3cret", "Bearers3cret", "Bearer # rotation", "Bearer s3cret\n"}) {
    const absl::Status status = auth->Check(header);
    EXPECT_TRUE(absl::IsUnauthenticated(status)) << "[" << header << "] " << status;
    EXPECT_EQ(status.message(), kUnauthenticatedMessage) << header;
  }
}

TEST_F(BearerTokenAuthTest, BadFilesAreRefusedNamingTheFile) {
  BearerTokenOptions options;
  options.token_file = path_;
  absl::StatusOr<std::unique_ptr<BearerTokenAuth>> missing = BearerTokenAuth::Open(options);
  EXPECT_TRUE(absl::IsInvalidArgument(missing.status()));
  EXPECT_NE(missing.status().message().find(path_), std::string::npos) << missing.status();
  Write("# only a comment\n\n");
  absl::StatusOr<std::unique_ptr<BearerTokenAuth>> empty = BearerTokenAuth::Open(options);
  EXPECT_NE(empty.status().message().find("holds no token"), std::string::npos) << empty.status();
  Write("two words\n");
  absl::StatusOr<std::unique_ptr<BearerTokenAuth>> spaced = BearerTokenAuth::Open(options);
  EXPECT_NE(spaced.status().message().find("line 1 is not a bearer token"), std::string::npos)
      << spaced.status();
  options.token_file.clear();
  EXPECT_TRUE(absl::IsInvalidArgument(BearerTokenAuth::Open(options).status()));
}

TEST_F(BearerTokenAuthTest, AChangedFileIsReadAgainAndABrokenOneKeepsThePreviousTokens) {
  Write("first\n");
  auto auth = Open();
  ASSERT_NE(auth, nullptr);
  EXPECT_TRUE(auth->Check("Bearer first").ok());
  Write("second\n");
  EXPECT_TRUE(absl::IsUnauthenticated(auth->Check("Bearer first")));
  EXPECT_TRUE(auth->Check("Bearer second").ok());
  Write("\n");  // emptied by mistake: keep serving the last good set
  EXPECT_TRUE(auth->Check("Bearer second").ok());
  fs::remove(path_);
  EXPECT_TRUE(auth->Check("Bearer second").ok());
  Write("third\n");
  EXPECT_TRUE(auth->Check("Bearer third").ok());
  EXPECT_TRUE(absl::IsUnauthenticated(auth->Check("Bearer second")));
}

TEST_F(BearerTokenAuthTest, TheFileIsLookedAtOnlyOnceAReloadInterval) {
  Write("first\n");
  auto auth = Open(absl::Hours(1));
  ASSERT_NE(auth, nullptr);
  Write("second\n");
  EXPECT_TRUE(auth->Check("Bearer first").ok());
  EXPECT_TRUE(absl::IsUnauthenticated(auth->Check("Bearer second")));
}

}  // namespace
}  // namespace twinspan::auth
