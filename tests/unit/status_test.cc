#include "common/status.h"

#include "gtest/gtest.h"

namespace twinspan {
namespace {

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  ABSL_ASSIGN_OR_RETURN(int half, Half(x));
  ABSL_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

absl::Status CheckEven(int x) {
  ABSL_RETURN_IF_ERROR(Half(x).status());
  return absl::OkStatus();
}

TEST(StatusMacros, AssignOrReturnPassesValues) { EXPECT_EQ(*Quarter(8), 2); }

TEST(StatusMacros, AssignOrReturnPropagatesTheFirstError) {
  const absl::StatusOr<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "odd");
}

TEST(StatusMacros, ReturnIfError) {
  EXPECT_TRUE(CheckEven(2).ok());
  EXPECT_EQ(CheckEven(3).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinspan
