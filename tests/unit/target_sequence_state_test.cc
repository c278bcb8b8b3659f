// SequenceState bookkeeping and the recurrent state (backend memory) families commit with.
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "services/target/sequence_state.h"

namespace twinspan::target {
namespace {

TEST(SequenceStateTest, TracksPendingRowsAndRefusesOverflow) {
  SequenceState state(10, {});
  EXPECT_EQ(state.BeginForward(0).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(state.BeginForward(4).ok());
  EXPECT_EQ(state.pending(), 4);
  EXPECT_EQ(state.BeginForward(1).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(state.CommitRows(5).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(state.CommitRows(3).ok());
  EXPECT_EQ(state.length(), 3);
  EXPECT_EQ(state.pending(), 0);
  const absl::Status overflow = state.BeginForward(8);
  EXPECT_EQ(overflow.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(overflow.message().find("context is 10"), std::string::npos) << overflow;
  EXPECT_TRUE(state.BeginForward(7).ok());
}

std::vector<float> Read(backend::Backend& be, const backend::Buffer& buffer) {
  std::vector<float> out(buffer.bytes() / sizeof(float));
  EXPECT_TRUE(be.Download(out.data(), buffer, 0, buffer.bytes()).ok());
  return out;
}

TEST(RecurrentStateTest, StartsZeroedAndKeepsTheStartLiveUntilTheEndStateIsKept) {
  auto be = cpu::NewCpuBackend(nullptr);
  auto created = RecurrentState::Create(*be, 2, 3);
  ASSERT_TRUE(created.ok()) << created.status();
  RecurrentState& state = **created;
  EXPECT_EQ(Read(*be, state.conv()), (std::vector<float>{0, 0}));
  EXPECT_EQ(Read(*be, state.ssm()), (std::vector<float>{0, 0, 0}));
  const std::vector<float> conv = {1, 2}, ssm = {3, 4, 5};
  ASSERT_TRUE(be->Upload(state.conv(), 0, conv.data(), 8).ok());
  ASSERT_TRUE(be->Upload(state.ssm(), 0, ssm.data(), 12).ok());
  EXPECT_EQ(state.pending_rows(), 0);
  auto replay = state.BeginForward(*be, 4, 10);
  ASSERT_TRUE(replay.ok()) << replay.status();
  EXPECT_EQ(state.pending_rows(), 4);
  EXPECT_TRUE(be->Zero(*replay, 10 * sizeof(float)).ok());  // Room for exactly 10 floats.
  EXPECT_FALSE(be->Zero(*replay, 11 * sizeof(float)).ok());
  // The forward writes its end state beside the live one, which stays the start.
  EXPECT_NE(state.end_ssm().data(), state.ssm().data());
  EXPECT_NE(state.end_conv().data(), state.conv().data());
  const std::vector<float> end_conv = {6, 5}, end_ssm = {7, 8, 9};
  ASSERT_TRUE(be->Upload(state.end_conv(), 0, end_conv.data(), 8).ok());
  ASSERT_TRUE(be->Upload(state.end_ssm(), 0, end_ssm.data(), 12).ok());
  EXPECT_EQ(Read(*be, state.conv()), conv);
  EXPECT_EQ(Read(*be, state.ssm()), ssm);
  state.KeepEndState();
  state.EndForward();
  EXPECT_EQ(state.pending_rows(), 0);
  EXPECT_EQ(Read(*be, state.conv()), end_conv);
  EXPECT_EQ(Read(*be, state.ssm()), end_ssm);
  EXPECT_EQ(Read(*be, state.end_ssm()), ssm);  // The next forward's end state goes there.
}

TEST(SequenceStateTest, CheckForwardChangesNothing) {
  SequenceState state(4, {});
  EXPECT_EQ(state.CheckForward(5).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(state.CheckForward(4).ok());
  EXPECT_EQ(state.pending(), 0);
  EXPECT_TRUE(state.OwnedBy(nullptr));  // Made by no model.
}

}  // namespace
}  // namespace twinspan::target
