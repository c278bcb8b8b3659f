// drafted == plain: a random tiny drafter of each kind over the golden tiny targets of each family
// (golden/README.md sections 5 and 6), greedy and sampled, with the drafter's linears as stored or
// at 4 bits (Q4), chains and (DFlash2) trees: drafts, whatever their precision or shape, only ever
// change speed.
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "common/safetensors/writer.h"
#include "gtest/gtest.h"
#include "services/drafter/drafter.h"
#include "services/target/target_model.h"
#include "tests/golden/drafter/drafted_plain_check.h"
#include "tests/golden/drafter/random_drafter.h"
#include "tests/testing/golden.h"

namespace twinspan::drafter {
namespace {

using ::twinspan::testing::WriteRandomDrafter;

struct Case {
  std::string target;
  bool dflash2;
  float temperature;
  bool q4 = false;
  int64_t tree_nodes = 0;  // DFlash2: trees of this many drafts.
};

class DraftedEqualsPlainTest : public ::testing::TestWithParam<Case> {};

TEST_P(DraftedEqualsPlainTest, SameTokens) {
  const Case& c = GetParam();
  const std::string target_dir = twinspan::testing::GoldenPath(c.target);
  auto target = target::OpenTargetModel(target_dir, {.context = 256});
  ASSERT_TRUE(target.ok()) << target.status();
  const std::string drafter_dir = WriteRandomDrafter(
      std::string("twinspan_drafter_") + (c.dflash2 ? "v2" : "v1"), c.dflash2, c.dflash2 ? 7 : 8);
  const DrafterModelOptions model{.context = 256,
                                  .linear_bits = c.q4 ? LinearBits::kQ4 : LinearBits::kAsStored};
  auto drafter =
      Drafter::Open(drafter_dir, target_dir, {.model = model, .head = "0:2048,3968:4096"});
  ASSERT_TRUE(drafter.ok()) << drafter.status();
  testing::ExpectDraftedEqualsPlain(**target, **drafter, c.temperature, c.tree_nodes);
}

INSTANTIATE_TEST_SUITE_P(Families, DraftedEqualsPlainTest,
                         ::testing::Values(Case{"hf_qwen3_tiny/model", false, 0.0f},
                                           Case{"hf_qwen3_tiny/model", true, 0.0f},
                                           Case{"hf_qwen3_tiny/model", true, 0.8f},
                                           Case{"hf_qwen3_tiny/model", false, 0.8f},
                                           Case{"hf_qwen3_5_tiny/model", false, 0.0f},
                                           Case{"hf_qwen3_5_tiny/model", true, 0.0f},
                                           Case{"hf_qwen3_5_tiny/model", true, 0.8f},
                                           Case{"hf_qwen3_5_tiny/model", false, 0.8f},
                                           Case{"hf_qwen3_tiny/model", true, 0.0f, true},
                                           Case{"hf_qwen3_tiny/model", false, 0.0f, true},
                                           Case{"hf_qwen3_5_tiny/model", true, 0.0f, true},
                                           Case{"hf_qwen3_5_tiny/model", true, 0.8f, true},
                                           Case{"hf_qwen3_tiny/model", true, 0.0f, false, 15},
                                           Case{"hf_qwen3_tiny/model", true, 0.8f, false, 9},
                                           Case{"hf_qwen3_5_tiny/model", true, 0.0f, false, 15},
                                           Case{"hf_qwen3_5_tiny/model", true, 0.8f, false, 31},
                                           Case{"hf_qwen3_5_tiny/model", true, 0.0f, true, 4}));

}  // namespace
}  // namespace twinspan::drafter
