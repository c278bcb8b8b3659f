// The Gated DeltaNet block's commit bookkeeping: replay of kept rows, and the no-op after a
// forward that failed before reaching the layer.
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "services/target/qwen3_5_gdn_block.h"

namespace twinspan::target {
namespace {

constexpr int64_t kHidden = 24;

class GdnBlockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    shape_.hidden = kHidden;
    shape_.dims = {.k_heads = 1, .v_heads = 2, .k_dim = 8, .v_dim = 4};
    shape_.conv_kernel = 4;
    weights_.in_proj_qkv = Linear(shape_.conv_channels(), kHidden);
    weights_.in_proj_z = Linear(shape_.value_width(), kHidden);
    weights_.in_proj_a = Linear(2, kHidden);
    weights_.in_proj_b = Linear(2, kHidden);
    weights_.conv = Normal(shape_.conv_channels() * shape_.conv_kernel);
    weights_.a_log = {0.5f, 1.5f};
    weights_.dt_bias = {1.0f, 0.5f};
    weights_.norm = Normal(4);
    weights_.out_proj = Linear(kHidden, shape_.value_width());
  }

  std::vector<float> Normal(int64_t n) {
    std::normal_distribution<float> dist(0.0f, 0.5f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng_);
    return v;
  }
  cpu::LinearWeight Linear(int64_t out, int64_t in) {
    return *cpu::LinearWeight::Dense(out, in, Normal(out * in));
  }
  static bool Same(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  }

  std::mt19937 rng_{3};
  GdnBlockShape shape_;
  GdnBlockWeights weights_;
};

TEST_F(GdnBlockTest, CommitReplaysKeptRowsToTheSerialState) {
  const std::vector<float> x = Normal(5 * kHidden);
  std::vector<float> out(5 * kHidden);
  RecurrentState serial = NewGdnState(shape_);
  for (int r = 0; r < 3; ++r) {  // Serial: three single rows.
    ASSERT_TRUE(GdnBlockForward({}, shape_, weights_, &x[r * kHidden], 1, serial, out.data()).ok());
    ASSERT_TRUE(GdnBlockCommit({}, shape_, weights_, serial, 1, 1).ok());
  }
  RecurrentState window = NewGdnState(shape_);
  ASSERT_TRUE(GdnBlockForward({}, shape_, weights_, x.data(), 5, window, out.data()).ok());
  EXPECT_FALSE(Same(window.ssm, serial.ssm));
  ASSERT_TRUE(GdnBlockCommit({}, shape_, weights_, window, 3, 5).ok());
  EXPECT_TRUE(Same(window.conv, serial.conv));
  EXPECT_TRUE(Same(window.ssm, serial.ssm));
  EXPECT_TRUE(window.conv_rows.empty() && window.ssm_rows.empty());
}

TEST_F(GdnBlockTest, CommitZeroWithoutAForwardChangesNothing) {
  const std::vector<float> x = Normal(2 * kHidden);
  std::vector<float> out(2 * kHidden);
  RecurrentState state = NewGdnState(shape_);
  ASSERT_TRUE(GdnBlockForward({}, shape_, weights_, x.data(), 2, state, out.data()).ok());
  ASSERT_TRUE(GdnBlockCommit({}, shape_, weights_, state, 2, 2).ok());
  const RecurrentState before = state;
  // A later forward failed before this layer ran; the model rolls every layer back with 0.
  ASSERT_TRUE(GdnBlockCommit({}, shape_, weights_, state, 0, 4).ok());
  EXPECT_TRUE(Same(state.conv, before.conv));
  EXPECT_TRUE(Same(state.ssm, before.ssm));
}

TEST_F(GdnBlockTest, BadStateSizesAndCommitsAreInvalidArgument) {
  const std::vector<float> x = Normal(kHidden);
  std::vector<float> out(kHidden);
  RecurrentState wrong = RecurrentState::Zeros(3, 7);
  EXPECT_EQ(GdnBlockForward({}, shape_, weights_, x.data(), 1, wrong, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  RecurrentState state = NewGdnState(shape_);
  ASSERT_TRUE(GdnBlockForward({}, shape_, weights_, x.data(), 1, state, out.data()).ok());
  EXPECT_EQ(GdnBlockCommit({}, shape_, weights_, state, 2, 1).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GdnBlockCommit({}, shape_, weights_, state, 1, 3).code(),  // Saved rows: 1, not 3.
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinspan::target
