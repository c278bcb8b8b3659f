#include "common/hash/sha256.h"
#include "gtest/gtest.h"

namespace twinspan::hash {
namespace {

TEST(TokenizerSha256Test, KnownVectors) {
  auto empty = Sha256Hex("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  auto abc = Sha256Hex("abc");
  ASSERT_TRUE(abc.ok());
  EXPECT_EQ(*abc, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(TokenizerSha256Test, IncrementalEqualsOneShot) {
  auto hasher = Sha256::Create();
  ASSERT_TRUE(hasher.ok());
  ASSERT_TRUE(hasher->Update("a").ok());
  ASSERT_TRUE(hasher->Update("bc").ok());
  auto hex = hasher->FinishHex();
  ASSERT_TRUE(hex.ok());
  EXPECT_EQ(*hex, *Sha256Hex("abc"));
  EXPECT_EQ(hasher->FinishHex().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(hasher->Update("x").code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace twinspan::hash
