#include <string>

#include "common/tokenizer/utf8.h"
#include "gtest/gtest.h"

namespace twinspan::tokenizer {
namespace {

std::string Lossy(const std::string& bytes) {
  std::string out;
  AppendUtf8Lossy(bytes, &out);
  return out;
}

const std::string kReplacement = "\xEF\xBF\xBD";

TEST(TokenizerUtf8Test, ValidateAcceptsWellFormedText) {
  EXPECT_TRUE(ValidateUtf8("").ok());
  EXPECT_TRUE(ValidateUtf8("ascii \xC3\xA9 \xE4\xBD\xA0 \xF0\x9F\x98\x80").ok());
}

TEST(TokenizerUtf8Test, ValidateRejectsMalformedTextWithOffset) {
  const absl::Status truncated = ValidateUtf8("ab\xE4\xBD");
  EXPECT_EQ(truncated.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(truncated.message()).find("offset 2"), std::string::npos) << truncated;
  EXPECT_FALSE(ValidateUtf8("\xC0\xAF").ok());          // overlong
  EXPECT_FALSE(ValidateUtf8("\xED\xA0\x80").ok());      // surrogate
  EXPECT_FALSE(ValidateUtf8("\xF4\x90\x80\x80").ok());  // above U+10FFFF
  EXPECT_FALSE(ValidateUtf8("\x80").ok());              // stray continuation
  EXPECT_FALSE(ValidateUtf8("\xFF").ok());
}

// Maximal-subpart replacement, as Rust's from_utf8_lossy and WHATWG TextDecoder do it.
TEST(TokenizerUtf8Test, LossyReplacesMaximalSubparts) {
  EXPECT_EQ(Lossy("ok"), "ok");
  EXPECT_EQ(Lossy("\xF0\x9F\x98"), kReplacement);             // one truncated sequence
  EXPECT_EQ(Lossy("\xE0\x80"), kReplacement + kReplacement);  // bad second byte
  EXPECT_EQ(Lossy("\xC0\xAF"), kReplacement + kReplacement);  // overlong lead
  EXPECT_EQ(Lossy("\xED\xA0\x80"), kReplacement + kReplacement + kReplacement);  // surrogate
  EXPECT_EQ(Lossy("a\xE4\xBD"
                  "b"),
            "a" + kReplacement + "b");
  EXPECT_EQ(Lossy("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
}

TEST(TokenizerUtf8Test, IncompleteSuffixIsHeldBackOnlyWhenItCanStillComplete) {
  EXPECT_EQ(IncompleteUtf8Suffix("abc"), 0u);
  EXPECT_EQ(IncompleteUtf8Suffix("a\xF0"), 1u);
  EXPECT_EQ(IncompleteUtf8Suffix("a\xF0\x9F"), 2u);
  EXPECT_EQ(IncompleteUtf8Suffix("a\xF0\x9F\x98"), 3u);
  EXPECT_EQ(IncompleteUtf8Suffix("a\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(IncompleteUtf8Suffix("a\xE0\x80"), 0u);  // can never complete
  EXPECT_EQ(IncompleteUtf8Suffix("\x80"), 0u);
}

}  // namespace
}  // namespace twinspan::tokenizer
