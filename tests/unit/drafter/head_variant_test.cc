#include "services/drafter/head_variant.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace twinspan::drafter {
namespace {

TEST(HeadVariantTest, TwoSpanOfTheQwen38Head) {
  auto variant = MakeHeadVariant("two-span", 248320);
  ASSERT_TRUE(variant.ok()) << variant.status();
  ASSERT_EQ(variant->spans.size(), 2u);
  EXPECT_EQ(variant->spans[0].begin, 0);
  EXPECT_EQ(variant->spans[0].end, 98304);
  EXPECT_EQ(variant->spans[1].begin, 248032);
  EXPECT_EQ(variant->spans[1].end, 248320);
  EXPECT_EQ(variant->columns(), 98592);
  EXPECT_EQ(variant->GlobalId(0), 0);
  EXPECT_EQ(variant->GlobalId(98303), 98303);
  EXPECT_EQ(variant->GlobalId(98304), 248032);
  EXPECT_EQ(variant->GlobalId(98591), 248319);
}

TEST(HeadVariantTest, FullAndSmallVocabularies) {
  auto full = MakeHeadVariant("full", 4096);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->columns(), 4096);
  auto small = MakeHeadVariant("two-span", 4096);  // Head and tail overlap: one span.
  ASSERT_TRUE(small.ok());
  ASSERT_EQ(small->spans.size(), 1u);
  EXPECT_EQ(small->columns(), 4096);
}

TEST(HeadVariantTest, ExplicitSpanList) {
  auto variant = MakeHeadVariant("0:1024,3968:4096", 4096);
  ASSERT_TRUE(variant.ok()) << variant.status();
  EXPECT_EQ(variant->columns(), 1152);
  EXPECT_EQ(variant->GlobalId(1024), 3968);
}

TEST(HeadVariantTest, ACheckpointNamesItsOwnVariants) {
  const std::map<std::string, std::string> named = {{"two-span", "0:6144,8064:8192"},
                                                    {"narrow", "0:1024"}};
  auto two = MakeHeadVariant("two-span", 8192, named);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->name, "two-span");
  ASSERT_EQ(two->spans.size(), 2u);
  EXPECT_EQ(two->spans[0].end, 6144);
  EXPECT_EQ(two->spans[1].begin, 8064);
  auto narrow = MakeHeadVariant("narrow", 8192, named);
  ASSERT_TRUE(narrow.ok());
  EXPECT_EQ(narrow->columns(), 1024);
  EXPECT_EQ(MakeHeadVariant("full", 8192, named)->columns(), 8192);  // full stays the head
  auto bad = MakeHeadVariant("two-span", 8192, {{"two-span", "0:9000"}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("two-span"), absl::string_view::npos);
}

TEST(HeadVariantTest, RejectsBadSpecs) {
  for (const char* spec : {"three-span", "0:10,5:20", "10:5", "0:5000", "0-10", "0:10,"}) {
    const auto variant = MakeHeadVariant(spec, 4096);
    EXPECT_EQ(variant.status().code(), absl::StatusCode::kInvalidArgument) << spec;
  }
}

}  // namespace
}  // namespace twinspan::drafter
