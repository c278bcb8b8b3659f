// BuildDraftTree: best first by path probability over the selector's score table.
#include "services/drafter/draft_tree.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace twinspan::drafter {
namespace {

// Two slots of three candidates. Slot 0 (after the anchor): p = softmax(2, 1, 0) = .665 .245 .090.
// Slot 1 after candidate 0 of slot 0 strongly prefers its candidate 2; after candidate 1, its 0.
struct Table {
  std::vector<int32_t> ids = {10, 11, 12, 20, 21, 22};
  std::vector<float> scores = {2, 1, 0, 2, 1, 0, 2, 1, 0,   // slot 0, rows alike
                               0, 0, 5, 5, 0, 0, 0, 0, 0};  // slot 1 after candidates 0, 1, 2
};

TEST(DraftTreeTest, AddsTheLikeliestPathsFirstAndParentsBeforeChildren) {
  Table t;
  auto tree = BuildDraftTree(t.ids, t.scores, 2, 3, {.nodes = 4});
  ASSERT_TRUE(tree.ok()) << tree.status();
  // 10 (.665), then 22 under it (.665 * .987), then 11 (.245), then 20 under 11 (.245 * .987).
  EXPECT_EQ(tree->ids, (std::vector<int32_t>{10, 22, 11, 20}));
  EXPECT_EQ(tree->parents, (std::vector<int32_t>{0, 1, 0, 3}));
  for (size_t i = 1; i < tree->log_probs.size(); ++i) {
    EXPECT_LE(tree->log_probs[i], tree->log_probs[i - 1]);  // Added in probability order.
  }
  EXPECT_NEAR(std::exp(tree->log_probs[0]), 0.6652, 1e-3);
}

TEST(DraftTreeTest, TheBudgetBoundsTheTreeAndDepthEndsAtTheLastSlot) {
  Table t;
  auto one = BuildDraftTree(t.ids, t.scores, 2, 3, {.nodes = 1});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->ids, (std::vector<int32_t>{10}));
  auto all = BuildDraftTree(t.ids, t.scores, 2, 3, {.nodes = 100});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->ids.size(), 12u);  // 3 + 3 x 3: every candidate of both slots.
  auto none = BuildDraftTree(t.ids, t.scores, 2, 3, {.nodes = 0});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->ids.empty());
}

TEST(DraftTreeTest, MaxChildrenAndMissingCandidatesNarrowTheTree) {
  Table t;
  t.ids[1] = -1;  // Slot 0 has no candidate 1.
  auto tree = BuildDraftTree(t.ids, t.scores, 2, 3, {.nodes = 100, .max_children = 2});
  ASSERT_TRUE(tree.ok());
  for (int32_t id : tree->ids) EXPECT_NE(id, -1);
  EXPECT_EQ(tree->ids.size(), 3u);  // 10 with its 2 children 20, 21.
}

TEST(DraftTreeTest, RefusesSizesThatDisagree) {
  Table t;
  EXPECT_FALSE(BuildDraftTree(t.ids, t.scores, 2, 2, {.nodes = 4}).ok());
  EXPECT_FALSE(BuildDraftTree(t.ids, t.scores, 2, 3, {.nodes = -1}).ok());
  EXPECT_FALSE(BuildDraftTree(t.ids, t.scores, 2, 3, {.nodes = 4, .max_children = 0}).ok());
}

}  // namespace
}  // namespace twinspan::drafter
