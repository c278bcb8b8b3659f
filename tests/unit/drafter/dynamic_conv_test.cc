#include "kernels/cpu/dynamic_conv.h"

#include <vector>

#include "gtest/gtest.h"

namespace twinspan::cpu {
namespace {

// 3 slots, 4 channels in 2 groups of 2, 2 taps; dynamic rows hold [side0: 2 taps x 2 groups,
// side1: ...] as the kernel projection writes them, so side 0 is stride 8.
TEST(DynamicConvTest, MatchesTheFormulaAndNeverReadsBeforeSlotZero) {
  const std::vector<float> x = {1,  2, 3, 4,  //
                                5,  6, 7, 8,  //
                                -1, 0, 1, 2};
  const std::vector<float> base = {1.0f, 0.5f, 2.0f, 0.0f,   // tap 0
                                   0.1f, 0.2f, 0.3f, 0.4f};  // tap 1
  std::vector<float> dynamic(3 * 8, 0.0f);
  for (int t = 0; t < 3; ++t) {
    for (int o = 0; o < 2; ++o) {
      for (int g = 0; g < 2; ++g) dynamic[t * 8 + o * 2 + g] = 0.01f * (t + 1) * (o + 2) * (g + 1);
      for (int g = 0; g < 2; ++g) dynamic[t * 8 + 4 + o * 2 + g] = 100.0f;  // side 1: unused
    }
  }
  std::vector<float> out(12);
  ASSERT_TRUE(
      DynamicConv({}, out, x, base, dynamic,
                  {.rows = 3, .channels = 4, .taps = 2, .group_size = 2, .dynamic_row_stride = 8})
          .ok());
  for (int t = 0; t < 3; ++t) {
    for (int c = 0; c < 4; ++c) {
      float want = 0.0f;
      for (int o = 0; o < 2 && o <= t; ++o) {
        want += (base[o * 4 + c] + dynamic[t * 8 + o * 2 + c / 2]) * x[(t - o) * 4 + c];
      }
      EXPECT_NEAR(out[t * 4 + c], want, 1e-6f) << "t=" << t << " c=" << c;
    }
  }
  // Slot 0 has no previous slot: only tap 0 contributes.
  EXPECT_NEAR(out[0], (1.0f + 0.02f) * 1.0f, 1e-6f);
}

TEST(DynamicConvTest, IdentityKernelCopiesTheInput) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<float> base = {1, 1, 1, 1, 0, 0, 0, 0};
  const std::vector<float> dynamic(2 * 4, 0.0f);
  std::vector<float> out(8);
  ASSERT_TRUE(
      DynamicConv({}, out, x, base, dynamic,
                  {.rows = 2, .channels = 4, .taps = 2, .group_size = 4, .dynamic_row_stride = 4})
          .ok());
  EXPECT_EQ(out, x);
}

TEST(DynamicConvTest, RejectsChannelsNotAMultipleOfTheGroup) {
  std::vector<float> x(6), out(6), base(6), dynamic(8);
  EXPECT_EQ(
      DynamicConv({}, out, x, base, dynamic,
                  {.rows = 2, .channels = 3, .taps = 2, .group_size = 2, .dynamic_row_stride = 4})
          .code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(DynamicConvTest, RejectsShortDynamic) {
  std::vector<float> x(8), out(8), base(8), dynamic(5);
  EXPECT_EQ(
      DynamicConv({}, out, x, base, dynamic,
                  {.rows = 2, .channels = 4, .taps = 2, .group_size = 2, .dynamic_row_stride = 4})
          .code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(DynamicConvTest, RejectsStrideBelowOneSide) {
  std::vector<float> x(8), out(8), base(8), dynamic(16);
  EXPECT_EQ(
      DynamicConv({}, out, x, base, dynamic,
                  {.rows = 2, .channels = 4, .taps = 2, .group_size = 2, .dynamic_row_stride = 3})
          .code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinspan::cpu
