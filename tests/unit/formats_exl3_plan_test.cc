// plan(k, n) and the span block ranges: a span view of the Qwen3.8-27B head must plan exactly as
// the whole head does, or its logits would change (DESIGN.md "The two-span EXL3 head").
#include "common/exl3/plan.h"
#include "common/exl3/span_view.h"
#include "gtest/gtest.h"

namespace twinspan::exl3 {
namespace {

constexpr int64_t kHidden = 5120;   // Qwen3.8-27B hidden size: the head's k.
constexpr int64_t kVocab = 248320;  // Its padded vocabulary: the head's n.

TEST(PlanTest, WideMatricesTakeOneSplitAndEightWarps) {
  EXPECT_EQ(plan(kHidden, kVocab), (Plan{1, 8}));
  EXPECT_EQ(plan(kHidden, kWideBlocks * 128), (Plan{1, 8}));
}

TEST(PlanTest, NarrowMatricesSplitK) {
  // tensorfold-anchor.md: a 3-block slice of a k = 5120 matrix plans to (8, 4).
  EXPECT_EQ(plan(kHidden, 384), (Plan{8, 4}));
  EXPECT_EQ(plan(kHidden, (kWideBlocks - 1) * 128), (Plan{4, 4}));
}

TEST(PlanTest, SmallKFallsBackToFewerWarpsThenNoSplit) {
  EXPECT_EQ(plan(128, kVocab), (Plan{1, 4}));  // kt = 8: 8 warps would leave 1 tile each.
  EXPECT_EQ(plan(128, 128), (Plan{1, 4}));
  EXPECT_EQ(plan(1024, 256), (Plan{2, 4}));
}

TEST(PlanTest, EveryPlanDividesTheKTiles) {
  for (int64_t k = 128; k <= 32768; k += 128) {
    for (int64_t n : {128, 384, 1024, 8192, 16384, 248320}) {
      const Plan p = plan(k, n);
      EXPECT_EQ((k / 16) % (int64_t{p.k_splits} * p.warps), 0) << k << " x " << n;
      EXPECT_GE(p.k_splits, 1);
      EXPECT_TRUE(p.warps == 4 || p.warps == 8);
    }
  }
}

TEST(PlanTest, ViewOfTailPlansAsWholeHead) {
  const BlockRange tail = SpanBlocks({248032, kVocab}, kVocab);
  EXPECT_EQ(tail.first * 128, 240128);
  EXPECT_EQ(tail.last * 128, kVocab);
  EXPECT_EQ(248032 - tail.first * 128, 7904);  // Columns dropped when packing.
  const int64_t tail_columns = (tail.last - tail.first) * 128;
  EXPECT_EQ(plan(kHidden, tail_columns), plan(kHidden, kVocab));
  EXPECT_EQ(plan(kHidden, tail_columns), (Plan{1, 8}));
  // The narrowest view of the same span would not: 384 columns plan to a K split.
  EXPECT_NE(plan(kHidden, 384), plan(kHidden, kVocab));
}

TEST(PlanTest, ViewOfHeadSpanPlansAsWholeHead) {
  const BlockRange head = SpanBlocks({0, 98304}, kVocab);
  EXPECT_EQ(head.first, 0);
  EXPECT_EQ(head.last * 128, 98304);
  EXPECT_EQ(plan(kHidden, (head.last - head.first) * 128), plan(kHidden, kVocab));
}

TEST(PlanTest, SpanBlocksWidenTowardsTheEndThenTheStart) {
  EXPECT_EQ(SpanBlocks({0, 10}, kVocab).last, kWideBlocks);
  const BlockRange middle = SpanBlocks({1000 * 128 + 5, 1000 * 128 + 300}, kVocab);
  EXPECT_EQ(middle.first, 1000);
  EXPECT_EQ(middle.last, 1000 + kWideBlocks);
  const BlockRange small = SpanBlocks({300, 400}, 10 * 128);  // Fewer blocks than kWideBlocks.
  EXPECT_EQ(small.first, 0);
  EXPECT_EQ(small.last, 10);
}

}  // namespace
}  // namespace twinspan::exl3
