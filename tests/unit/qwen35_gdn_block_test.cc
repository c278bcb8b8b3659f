// The Gated DeltaNet block on the CPU backend: commit replays kept rows to the serial state, the
// no-op after a forward that failed before reaching the layer, two sequences in one forward, and
// bad state sizes and commits.
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
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
    GdnBlockWeights& w = host_;
    w.in_proj_qkv = Linear(shape_.conv_channels(), kHidden);
    w.in_proj_z = Linear(shape_.value_width(), kHidden);
    w.in_proj_a = Linear(2, kHidden);
    w.in_proj_b = Linear(2, kHidden);
    w.conv = Normal(shape_.conv_channels() * shape_.conv_kernel);
    w.a_log = {0.5f, 1.5f};
    w.dt_bias = {1.0f, 0.5f};
    w.norm = Normal(4);
    w.out_proj = Linear(kHidden, shape_.value_width());
    auto handles = UploadGdnBlock(*be_, w);
    ASSERT_TRUE(handles.ok()) << handles.status();
    weights_ = std::move(*handles);
  }

  GdnBlockWeights host_;
  std::vector<float> Normal(int64_t n) {
    std::normal_distribution<float> dist(0.0f, 0.5f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng_);
    return v;
  }
  cpu::LinearWeight Linear(int64_t out, int64_t in) {
    return *cpu::LinearWeight::Dense(out, in, Normal(out * in));
  }
  LayerState NewState() {
    LayerState state;
    auto recurrent = NewGdnState(*be_, shape_);
    EXPECT_TRUE(recurrent.ok()) << recurrent.status();
    state.recurrent = std::move(*recurrent);
    return state;
  }
  std::vector<float> Read(const backend::Buffer& buffer) {
    std::vector<float> out(buffer.bytes() / sizeof(float));
    EXPECT_TRUE(be_->Download(out.data(), buffer, 0, buffer.bytes()).ok());
    return out;
  }
  static bool Same(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  }

  // One forward of `x` ([sum of segment rows, hidden], host) with segment s on states[s]; the
  // block's output, downloaded.
  absl::StatusOr<std::vector<float>> Forward(const std::vector<float>& x,
                                             std::vector<int64_t> segment_rows,
                                             std::vector<LayerState*> states) {
    std::vector<RowSegment> segments;
    std::vector<int64_t> positions(x.size() / kHidden, 0);  // The block reads no positions.
    int64_t rows = 0;
    for (int64_t m : segment_rows) {
      segments.push_back({rows, m, absl::MakeConstSpan(positions).subspan(rows, m)});
      rows += m;
    }
    auto bx = be_->UploadFloats(x);
    auto out = be_->AllocateFloats(rows * kHidden);
    if (!bx.ok() || !out.ok()) return absl::InternalError("allocation");
    const LayerRows layer_rows{rows, nullptr, nullptr, segments};
    absl::Status status = GdnBlockForward(*be_, shape_, weights_, (*bx)->floats(), layer_rows,
                                          states, (*out)->floats());
    if (!status.ok()) return status;
    return Read(**out);
  }

  std::mt19937 rng_{3};
  std::unique_ptr<backend::Backend> be_ = cpu::NewCpuBackend(nullptr);
  GdnBlockShape shape_;
  GdnBlockHandles weights_;
};

TEST_F(GdnBlockTest, CommitReplaysKeptRowsToTheSerialState) {
  const std::vector<float> x = Normal(5 * kHidden);
  LayerState serial = NewState();
  for (int r = 0; r < 3; ++r) {  // Serial: three single rows.
    const std::vector<float> row(x.begin() + r * kHidden, x.begin() + (r + 1) * kHidden);
    ASSERT_TRUE(Forward(row, {1}, {&serial}).ok());
    ASSERT_TRUE(GdnBlockCommit(*be_, shape_, weights_, *serial.recurrent, 1, 1).ok());
  }
  LayerState window = NewState();
  ASSERT_TRUE(Forward(x, {5}, {&window}).ok());
  EXPECT_FALSE(Same(Read(window.recurrent->ssm()), Read(serial.recurrent->ssm())));
  ASSERT_TRUE(GdnBlockCommit(*be_, shape_, weights_, *window.recurrent, 3, 5).ok());
  EXPECT_TRUE(Same(Read(window.recurrent->conv()), Read(serial.recurrent->conv())));
  EXPECT_TRUE(Same(Read(window.recurrent->ssm()), Read(serial.recurrent->ssm())));
  EXPECT_EQ(window.recurrent->pending_rows(), 0);
}

TEST_F(GdnBlockTest, AForwardLeavesTheLiveStateToCommit) {
  const std::vector<float> x = Normal(4 * kHidden);
  LayerState state = NewState(), serial = NewState();
  const std::vector<float> conv = Read(state.recurrent->conv());
  const std::vector<float> ssm = Read(state.recurrent->ssm());
  ASSERT_TRUE(Forward(x, {4}, {&state}).ok());
  EXPECT_TRUE(Same(Read(state.recurrent->conv()), conv));  // Nothing copied aside to restore.
  EXPECT_TRUE(Same(Read(state.recurrent->ssm()), ssm));
  ASSERT_TRUE(GdnBlockCommit(*be_, shape_, weights_, *state.recurrent, 0, 4).ok());
  EXPECT_TRUE(Same(Read(state.recurrent->ssm()), ssm));
  // Keeping every row makes the forward's end state live: serial decoding's.
  ASSERT_TRUE(Forward(x, {4}, {&state}).ok());
  ASSERT_TRUE(GdnBlockCommit(*be_, shape_, weights_, *state.recurrent, 4, 4).ok());
  for (int r = 0; r < 4; ++r) {
    const std::vector<float> row(x.begin() + r * kHidden, x.begin() + (r + 1) * kHidden);
    ASSERT_TRUE(Forward(row, {1}, {&serial}).ok());
    ASSERT_TRUE(GdnBlockCommit(*be_, shape_, weights_, *serial.recurrent, 1, 1).ok());
  }
  EXPECT_FALSE(Same(Read(state.recurrent->ssm()), ssm));
  EXPECT_TRUE(Same(Read(state.recurrent->conv()), Read(serial.recurrent->conv())));
  EXPECT_TRUE(Same(Read(state.recurrent->ssm()), Read(serial.recurrent->ssm())));
}

TEST_F(GdnBlockTest, CommitZeroWithoutAForwardChangesNothing) {
  const std::vector<float> x = Normal(2 * kHidden);
  LayerState state = NewState();
  ASSERT_TRUE(Forward(x, {2}, {&state}).ok());
  ASSERT_TRUE(GdnBlockCommit(*be_, shape_, weights_, *state.recurrent, 2, 2).ok());
  const std::vector<float> conv = Read(state.recurrent->conv());
  const std::vector<float> ssm = Read(state.recurrent->ssm());
  // A later forward failed before this layer ran; the model rolls every layer back with 0.
  ASSERT_TRUE(GdnBlockCommit(*be_, shape_, weights_, *state.recurrent, 0, 4).ok());
  EXPECT_TRUE(Same(Read(state.recurrent->conv()), conv));
  EXPECT_TRUE(Same(Read(state.recurrent->ssm()), ssm));
}

TEST_F(GdnBlockTest, TwoSequencesInOneForwardEqualTheirOwnForwards) {
  const std::vector<float> x = Normal(7 * kHidden);  // Rows 0..2 of one sequence, 3..6 of another.
  LayerState a = NewState(), b = NewState(), solo_a = NewState(), solo_b = NewState();
  ASSERT_TRUE(Forward(Normal(2 * kHidden), {2}, {&b}).ok());  // b has a history, a has none.
  ASSERT_TRUE(GdnBlockCommit(*be_, shape_, weights_, *b.recurrent, 2, 2).ok());
  ASSERT_TRUE(be_->Copy(solo_b.recurrent->conv().data(), b.recurrent->conv().data(),
                        b.recurrent->conv().bytes())
                  .ok());
  ASSERT_TRUE(be_->Copy(solo_b.recurrent->ssm().data(), b.recurrent->ssm().data(),
                        b.recurrent->ssm().bytes())
                  .ok());
  auto together = Forward(x, {3, 4}, {&a, &b});
  auto alone_a = Forward({x.begin(), x.begin() + 3 * kHidden}, {3}, {&solo_a});
  auto alone_b = Forward({x.begin() + 3 * kHidden, x.end()}, {4}, {&solo_b});
  ASSERT_TRUE(together.ok() && alone_a.ok() && alone_b.ok());
  std::vector<float> alone = *alone_a;
  alone.insert(alone.end(), alone_b->begin(), alone_b->end());
  EXPECT_TRUE(Same(*together, alone));
  // Each keeps its own replay: commit 1 of a and 3 of b equal the solo commits.
  ASSERT_TRUE(GdnBlockCommit(*be_, shape_, weights_, *a.recurrent, 1, 3).ok());
  ASSERT_TRUE(GdnBlockCommit(*be_, shape_, weights_, *b.recurrent, 3, 4).ok());
  ASSERT_TRUE(GdnBlockCommit(*be_, shape_, weights_, *solo_a.recurrent, 1, 3).ok());
  ASSERT_TRUE(GdnBlockCommit(*be_, shape_, weights_, *solo_b.recurrent, 3, 4).ok());
  EXPECT_TRUE(Same(Read(a.recurrent->ssm()), Read(solo_a.recurrent->ssm())));
  EXPECT_TRUE(Same(Read(b.recurrent->ssm()), Read(solo_b.recurrent->ssm())));
  EXPECT_TRUE(Same(Read(b.recurrent->conv()), Read(solo_b.recurrent->conv())));
}

TEST_F(GdnBlockTest, BadStateSizesAndCommitsAreInvalidArgument) {
  const std::vector<float> x = Normal(kHidden);
  LayerState wrong;
  auto recurrent = RecurrentState::Create(*be_, 3, 7);
  ASSERT_TRUE(recurrent.ok());
  wrong.recurrent = std::move(*recurrent);
  EXPECT_EQ(Forward(x, {1}, {&wrong}).status().code(), absl::StatusCode::kInvalidArgument);
  LayerState state = NewState();
  ASSERT_TRUE(Forward(x, {1}, {&state}).ok());
  EXPECT_EQ(GdnBlockCommit(*be_, shape_, weights_, *state.recurrent, 2, 1).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GdnBlockCommit(*be_, shape_, weights_, *state.recurrent, 1, 3).code(),  // Saved: 1.
            absl::StatusCode::kInvalidArgument);
}

// in_proj_a and in_proj_b upload as one linear (one launch a forward): its outputs are a's, then
// b's, bit for bit.
TEST_F(GdnBlockTest, GateProjectionsAreOneLinearOfBothWeights) {
  ASSERT_EQ(weights_.in_proj_ab->out_features(), 4);
  ASSERT_EQ(weights_.in_proj_ab->in_features(), kHidden);
  const int64_t rows = 3;
  const std::vector<float> x = Normal(rows * kHidden);
  std::vector<float> a(rows * 2), b(rows * 2);
  ASSERT_TRUE(cpu::Linear({}, x.data(), rows, host_.in_proj_a, a.data()).ok());
  ASSERT_TRUE(cpu::Linear({}, x.data(), rows, host_.in_proj_b, b.data()).ok());
  auto bx = be_->UploadFloats(x);
  auto ab = be_->AllocateFloats(rows * 4);
  ASSERT_TRUE(bx.ok() && ab.ok());
  ASSERT_TRUE(
      be_->Linear((*bx)->floats(), kHidden, rows, *weights_.in_proj_ab, (*ab)->floats(), 4).ok());
  const std::vector<float> got = Read(**ab);
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t h = 0; h < 2; ++h) {
      EXPECT_EQ(got[t * 4 + h], a[t * 2 + h]) << "row " << t << " head " << h;
      EXPECT_EQ(got[t * 4 + 2 + h], b[t * 2 + h]) << "row " << t << " head " << h;
    }
  }
  GdnBlockWeights narrow = host_;
  narrow.in_proj_b = Linear(2, kHidden - 1);
  EXPECT_EQ(UploadGdnBlock(*be_, narrow).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinspan::target
