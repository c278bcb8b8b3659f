#include "kernels/cpu/candidate_selector.h"

#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace twinspan::cpu {
namespace {

CodebookView F32Book(const std::vector<float>& rows, int64_t rank) {
  return {.type = CodebookType::kF32,
          .data = reinterpret_cast<const std::byte*>(rows.data()),
          .rows = static_cast<int64_t>(rows.size()) / rank,
          .rank = rank};
}

// Vocabulary of 4, rank 1: pred[v] = v, succ[v] = v, so the edge is prev * hp * cand.
struct Walk {
  std::vector<float> pred = {0, 1, 2, 3};
  std::vector<float> succ = {0, 1, 2, 3};
  std::vector<int32_t> candidates = {1, 2,   // slot 0
                                     3, 0};  // slot 1
  std::vector<float> unary = {1.0f, 0.5f, 0.2f, 1.0f};
  std::vector<float> hp = {1.0f, 1.0f};
  std::vector<int32_t> proposals = std::vector<int32_t>(2);
  std::vector<float> scores = std::vector<float>(4);
  std::vector<float> probs = std::vector<float>(4);

  SelectorWalkInputs Inputs(std::span<const float> uniforms = {}) const {
    return {.candidate_ids = candidates,
            .unary = unary,
            .hidden_projection = hp,
            .predecessor = F32Book(pred, 1),
            .successor = F32Book(succ, 1),
            .uniforms = uniforms};
  }
  SelectorWalkOutputs Outputs() {
    return {.proposals = proposals, .scores = scores, .probabilities = probs};
  }
};

TEST(SelectorWalkTest, GreedyWalkFollowsThePairScoresNotTheUnaryArgmax) {
  Walk w;
  ASSERT_TRUE(
      SelectorWalk({}, w.Inputs(), w.Outputs(), {.slots = 2, .top_k = 2, .rank = 1, .anchor_id = 1})
          .ok());
  // Slot 0 from prev 1: 1 + 1*1 = 2 vs 0.5 + 1*2 = 2.5 -> token 2.
  // Slot 1 from prev 2: 0.2 + 2*3 = 6.2 vs 1 + 0 = 1 -> token 3.
  EXPECT_EQ(w.proposals, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(w.scores, (std::vector<float>{2.0f, 2.5f, 6.2f, 1.0f}));
}

TEST(SelectorWalkTest, GreedyTieKeepsTheLowerCandidate) {
  Walk w;
  w.unary = {1.5f, 0.5f, 0.0f, 0.0f};
  w.candidates = {1, 2, 0, 0};
  ASSERT_TRUE(
      SelectorWalk({}, w.Inputs(), w.Outputs(), {.slots = 2, .top_k = 2, .rank = 1, .anchor_id = 1})
          .ok());
  EXPECT_EQ(w.proposals[0], 1);  // 1.5 + 1 == 0.5 + 2
}

TEST(SelectorWalkTest, SampledWalkReturnsSoftmaxRowsAndFollowsTheUniforms) {
  Walk w;
  const std::vector<float> low = {0.0f, 0.0f};
  ASSERT_TRUE(SelectorWalk({}, w.Inputs(low), w.Outputs(),
                           {.slots = 2, .top_k = 2, .rank = 1, .anchor_id = 1, .temperature = 2.0f})
                  .ok());
  // u = 0 picks the first candidate of each slot: token 1, then from prev 1: 0.2 + 3 vs 1 + 0.
  EXPECT_EQ(w.proposals, (std::vector<int32_t>{1, 3}));
  const float p0 = 1.0f / (1.0f + std::exp((2.5f - 2.0f) / 2.0f));
  EXPECT_NEAR(w.probs[0], p0, 1e-6f);
  EXPECT_NEAR(w.probs[0] + w.probs[1], 1.0f, 1e-6f);
  EXPECT_NEAR(w.probs[2], 1.0f / (1.0f + std::exp((1.0f - 3.2f) / 2.0f)), 1e-6f);

  const std::vector<float> high = {0.999f, 0.999f};
  ASSERT_TRUE(SelectorWalk({}, w.Inputs(high), w.Outputs(),
                           {.slots = 2, .top_k = 2, .rank = 1, .anchor_id = 1, .temperature = 2.0f})
                  .ok());
  EXPECT_EQ(w.proposals, (std::vector<int32_t>{2, 0}));
}

TEST(SelectorWalkTest, ReadsBf16Codebooks) {
  Walk w;
  std::vector<uint16_t> pred16 = {0x0000, 0x3f80, 0x4000, 0x4040};  // 0, 1, 2, 3
  CodebookView pred{.type = CodebookType::kBF16,
                    .data = reinterpret_cast<const std::byte*>(pred16.data()),
                    .rows = 4,
                    .rank = 1};
  SelectorWalkInputs inputs = w.Inputs();
  inputs.predecessor = pred;
  inputs.successor = pred;
  ASSERT_TRUE(
      SelectorWalk({}, inputs, w.Outputs(), {.slots = 2, .top_k = 2, .rank = 1, .anchor_id = 1})
          .ok());
  EXPECT_EQ(w.proposals, (std::vector<int32_t>{2, 3}));
}

TEST(SelectorWalkTest, RejectsCandidateOutsideTheVocabulary) {
  Walk w;
  w.candidates[3] = 4;
  const absl::Status status = SelectorWalk({}, w.Inputs(), w.Outputs(),
                                           {.slots = 2, .top_k = 2, .rank = 1, .anchor_id = 1});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("candidate id 4"), std::string::npos) << status;
}

TEST(SelectorWalkTest, RejectsAnchorOutsideTheVocabulary) {
  Walk w;
  EXPECT_EQ(SelectorWalk({}, w.Inputs(), w.Outputs(),
                         {.slots = 2, .top_k = 2, .rank = 1, .anchor_id = -1})
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SelectorWalkTest, SampledWalkNeedsOneUniformPerSlotInRange) {
  Walk w;
  const std::vector<float> one = {0.5f};
  EXPECT_EQ(SelectorWalk({}, w.Inputs(one), w.Outputs(),
                         {.slots = 2, .top_k = 2, .rank = 1, .anchor_id = 1, .temperature = 1.0f})
                .code(),
            absl::StatusCode::kInvalidArgument);
  const std::vector<float> out_of_range = {0.5f, 1.0f};
  EXPECT_EQ(SelectorWalk({}, w.Inputs(out_of_range), w.Outputs(),
                         {.slots = 2, .top_k = 2, .rank = 1, .anchor_id = 1, .temperature = 1.0f})
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SelectorWalkTest, RejectsCodebookOfWrongRank) {
  Walk w;
  SelectorWalkInputs inputs = w.Inputs();
  inputs.successor.rank = 2;
  inputs.successor.rows = 2;
  EXPECT_EQ(
      SelectorWalk({}, inputs, w.Outputs(), {.slots = 2, .top_k = 2, .rank = 1, .anchor_id = 1})
          .code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(SelectorScoreTableTest, HoldsEveryPairScoreAndTheWalksScoresAlongItsPath) {
  Walk w;
  std::vector<float> table(2 * 2 * 2);
  const SelectorWalkParams params{.slots = 2, .top_k = 2, .rank = 1, .anchor_id = 1};
  ASSERT_TRUE(SelectorScoreTable({}, w.Inputs(), table, params).ok());
  // Slot 0 after the anchor (both rows alike): 1 + 1*1*1, 0.5 + 1*1*2.
  EXPECT_EQ(table, (std::vector<float>{2.0f, 2.5f, 2.0f, 2.5f,
                                       // Slot 1 after candidate 1 (token 1), then token 2.
                                       0.2f + 3.0f, 1.0f, 0.2f + 6.0f, 1.0f}));
  ASSERT_TRUE(SelectorWalk({}, w.Inputs(), w.Outputs(), params).ok());
  // The walk took token 2 (candidate 1) at slot 0: its slot-1 scores are table row (1, 1).
  EXPECT_EQ(0, std::memcmp(&table[0], &w.scores[0], 2 * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(&table[6], &w.scores[2], 2 * sizeof(float)));
}

TEST(SelectorScoreTableTest, RefusesATableOfTheWrongSizeAndBadIds) {
  Walk w;
  std::vector<float> table(7);
  const SelectorWalkParams params{.slots = 2, .top_k = 2, .rank = 1, .anchor_id = 1};
  EXPECT_EQ(SelectorScoreTable({}, w.Inputs(), table, params).code(),
            absl::StatusCode::kInvalidArgument);
  table.resize(8);
  w.candidates[3] = 4;
  EXPECT_EQ(SelectorScoreTable({}, w.Inputs(), table, params).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinspan::cpu
