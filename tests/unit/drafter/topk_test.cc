#include "kernels/cpu/topk.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace twinspan::cpu {
namespace {

TEST(TopKTest, SortsDescendingPerRow) {
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 2.0f,  //
                                     9.0f, 1.0f, 8.0f,  7.0f};
  std::vector<float> values(4);
  std::vector<int32_t> indices(4);
  ASSERT_TRUE(TopK({}, logits, values, indices, {.rows = 2, .cols = 4, .k = 2}).ok());
  EXPECT_EQ(indices, (std::vector<int32_t>{1, 3, 0, 2}));
  EXPECT_EQ(values, (std::vector<float>{3.0f, 2.0f, 9.0f, 8.0f}));
}

TEST(TopKTest, EqualValuesKeepLowerColumnFirst) {
  const std::vector<float> logits = {1.0f, 2.0f, 2.0f, 1.0f, 2.0f};
  std::vector<float> values(3);
  std::vector<int32_t> indices(3);
  ASSERT_TRUE(TopK({}, logits, values, indices, {.rows = 1, .cols = 5, .k = 3}).ok());
  EXPECT_EQ(indices, (std::vector<int32_t>{1, 2, 4}));
}

TEST(TopKTest, KEqualToColsSortsTheWholeRow) {
  const std::vector<float> logits = {-INFINITY, 0.0f, INFINITY};
  std::vector<float> values(3);
  std::vector<int32_t> indices(3);
  ASSERT_TRUE(TopK({}, logits, values, indices, {.rows = 1, .cols = 3, .k = 3}).ok());
  EXPECT_EQ(indices, (std::vector<int32_t>{2, 1, 0}));
}

TEST(TopKTest, RejectsKOutOfRange) {
  const std::vector<float> logits = {1.0f, 2.0f};
  std::vector<float> values(3);
  std::vector<int32_t> indices(3);
  EXPECT_EQ(TopK({}, logits, values, indices, {.rows = 1, .cols = 2, .k = 3}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TopK({}, logits, {}, {}, {.rows = 1, .cols = 2, .k = 0}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TopKTest, RejectsMismatchedSizes) {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  std::vector<float> values(1);
  std::vector<int32_t> indices(1);
  EXPECT_EQ(TopK({}, logits, values, indices, {.rows = 1, .cols = 4, .k = 1}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TopKTest, RejectsNaN) {
  const std::vector<float> logits = {1.0f, NAN, 3.0f};
  std::vector<float> values(1);
  std::vector<int32_t> indices(1);
  const absl::Status status = TopK({}, logits, values, indices, {.rows = 1, .cols = 3, .k = 1});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("column 1"), std::string::npos) << status;
}

}  // namespace
}  // namespace twinspan::cpu

namespace twinspan::cpu {
namespace {

TEST(TopKTest, ThreadsDoNotChangeTheResult) {
  std::vector<float> logits(9 * 100);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>((i * 7919) % 101);
  std::vector<float> v1(9 * 5), v2(9 * 5);
  std::vector<int32_t> i1(9 * 5), i2(9 * 5);
  ThreadPool pool(2);
  ASSERT_TRUE(TopK({}, logits, v1, i1, {.rows = 9, .cols = 100, .k = 5}).ok());
  ASSERT_TRUE(TopK({.pool = &pool}, logits, v2, i2, {.rows = 9, .cols = 100, .k = 5}).ok());
  EXPECT_EQ(i1, i2);
  EXPECT_EQ(v1, v2);
}

}  // namespace
}  // namespace twinspan::cpu
