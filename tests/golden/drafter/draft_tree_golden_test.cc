// DFlash2 trees on golden/dflash2_drafter_tiny over golden/hf_qwen3_tiny (golden/README.md section
// 8): Propose with tree_nodes builds a best-first tree from the same block the chain comes from,
// so its first-child path is a prefix of the selector walk's chain, its drafts are the slots'
// candidates, and every parent comes first. Bad requests are refused.
#include <algorithm>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "services/draft_link/draft_proposal.h"
#include "services/drafter/drafter.h"
#include "tests/testing/golden.h"

namespace twinspan::drafter {
namespace {

using ::twinspan::testing::GoldenPath;

ProposeOptions Tree(int64_t nodes, float temperature = 0.0f) {
  ProposeOptions options;
  options.temperature = temperature;
  options.tree_nodes = nodes;
  return options;
}

class DraftTreeGoldenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto drafter =
        Drafter::Open(GoldenPath("dflash2_drafter_tiny/model"), GoldenPath("hf_qwen3_tiny/model"),
                      {.model = {.kv_dtype = cpu::KvDtype::kF32, .context = 64}, .head = "full"});
    ASSERT_TRUE(drafter.ok()) << drafter.status();
    drafter_ = std::move(*drafter);
  }

  // A stream with `rows` context rows of raw taps (a fixed ramp).
  std::unique_ptr<DraftStream> Stream(int64_t rows) {
    auto stream = drafter_->NewStream();
    EXPECT_TRUE(stream.ok()) << stream.status();
    const DrafterConfig& c = drafter_->config();
    std::vector<float> taps(rows * c.num_taps() * c.hidden_size);
    for (size_t i = 0; i < taps.size(); ++i) taps[i] = 0.01f * static_cast<float>(i % 97) - 0.4f;
    EXPECT_TRUE(drafter_->AppendTaps(**stream, TapForm::kRaw, taps, rows).ok());
    return std::move(*stream);
  }

  std::unique_ptr<Drafter> drafter_;
};

TEST_F(DraftTreeGoldenTest, TheTreesMainChainIsAPrefixOfTheWalksChain) {
  auto chain_stream = Stream(6);
  auto tree_stream = Stream(6);
  auto chain = drafter_->Propose(*chain_stream, 11, {});
  ASSERT_TRUE(chain.ok()) << chain.status();
  for (const int64_t nodes : {1, 4, 15, 31}) {
    SCOPED_TRACE(nodes);
    auto tree = drafter_->Propose(*tree_stream, 11, Tree(nodes));
    ASSERT_TRUE(tree.ok()) << tree.status();
    ASSERT_EQ(static_cast<int64_t>(tree->ids.size()), nodes);
    engine::DraftProposal proposal;
    proposal.ids.assign(tree->ids.begin(), tree->ids.end());
    proposal.parents.assign(tree->tree_parents.begin(), tree->tree_parents.end());
    ASSERT_TRUE(proposal.Validate(drafter_->config().vocab_size, nodes).ok());
    const engine::DraftProposal main = proposal.MainChain();
    ASSERT_LE(main.ids.size(), chain->ids.size());
    for (size_t i = 0; i < main.ids.size(); ++i) {
      EXPECT_EQ(static_cast<int32_t>(main.ids[i]), chain->ids[i]) << "depth " << i + 1;
    }
    // A draft at depth d is one of slot d - 1's candidates.
    const int64_t k = drafter_->config().selector_top_k;
    const std::vector<int32_t> depth = [&] {
      std::vector<int32_t> d(proposal.ids.size());
      for (size_t i = 0; i < d.size(); ++i) {
        d[i] = proposal.parents[i] == 0 ? 1 : d[proposal.parents[i] - 1] + 1;
      }
      return d;
    }();
    for (size_t i = 0; i < proposal.ids.size(); ++i) {
      const auto begin = tree->candidate_ids.begin() + (depth[i] - 1) * k;
      EXPECT_NE(std::find(begin, begin + k, tree->ids[i]), begin + k) << "draft " << i;
    }
  }
}

TEST_F(DraftTreeGoldenTest, TreesOfAChainDrafterOrASampledWalkAreRefused) {
  auto stream = Stream(3);
  EXPECT_EQ(drafter_->Propose(*stream, 11, Tree(4, 0.7f)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(drafter_->Propose(*stream, 11, Tree(kMaxTreeNodes + 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto v1 = Drafter::Open(GoldenPath("dflash_drafter_tiny/model"),
                          GoldenPath("hf_qwen3_tiny/model"), {.model = {.context = 64}});
  ASSERT_TRUE(v1.ok()) << v1.status();
  auto v1_stream = (*v1)->NewStream();
  ASSERT_TRUE(v1_stream.ok());
  const DrafterConfig& c = (*v1)->config();
  const std::vector<float> taps(c.num_taps() * c.hidden_size, 0.1f);
  ASSERT_TRUE((*v1)->AppendTaps(**v1_stream, TapForm::kRaw, taps, 1).ok());
  EXPECT_EQ((*v1)->Propose(**v1_stream, 11, Tree(4)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinspan::drafter
