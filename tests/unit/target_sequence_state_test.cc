// SequenceState bookkeeping and the recurrent-state snapshots families commit with.
#include "gtest/gtest.h"
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

TEST(RecurrentStateTest, RestoresAnyRowSnapshotOrTheStart) {
  RecurrentState state = RecurrentState::Zeros(2, 3);
  state.conv = {1, 2};
  state.ssm = {3, 4, 5};
  state.SaveStart();
  for (int row = 0; row < 3; ++row) {
    state.conv[0] += 10;
    state.ssm[2] += 100;
    state.SaveRow(row);
  }
  state.RestoreRow(1);
  EXPECT_EQ(state.conv, (std::vector<float>{21, 2}));
  EXPECT_EQ(state.ssm, (std::vector<float>{3, 4, 205}));
  state.RestoreStart();
  EXPECT_EQ(state.conv, (std::vector<float>{1, 2}));
  EXPECT_EQ(state.ssm, (std::vector<float>{3, 4, 5}));
}

}  // namespace
}  // namespace twinspan::target
