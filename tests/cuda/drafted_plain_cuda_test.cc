// drafted == plain on the GPU (DESIGN.md, exactness contract 1): target and drafter both on the
// CUDA backend, drafter::SpeculativeGenerate against drafter::PlainGenerate, greedy and sampled,
// the same token ids. Random tiny drafters of both kinds (linears as stored and at 4 bits) over
// the golden tiny targets of both families (golden/hf_qwen3_tiny, hf_qwen3_5_tiny; README
// sections 5 and 6) and the EXL3 qwen3_5 one (exl3_qwen3_5_tiny, section 4), whose EXL3 head
// the drafter's span head shares on the GPU; bf16 K/V (the serving default). Drafts may change
// only speed: every round's kept tokens are the target's own draws, so this holds bit for bit on
// one backend. Also with the drafter on a second CUDA backend of the same GPU, and with trees of
// drafts (the tree verify's CUDA ops: TreeAttention, the Gated DeltaNet tree kernels, KvCopy,
// GatherRows). Needs a GPU.
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "services/drafter/drafter.h"
#include "services/target/target_model.h"
#include "tests/cuda/drafter_cuda_util.h"
#include "tests/golden/drafter/drafted_plain_check.h"
#include "tests/golden/drafter/random_drafter.h"
#include "tests/testing/golden.h"

namespace twinspan::drafter {
namespace {

using testing::Cuda;

struct Case {
  std::string target;
  bool dflash2;
  float temperature;
  bool q4 = false;
  bool two_backends = false;
  int64_t tree_nodes = 0;  // DFlash2: trees of this many drafts.
};

std::string Name(const Case& c) {
  std::string name = c.target.substr(0, c.target.find('/'));
  name += c.dflash2 ? "_dflash2" : "_dflash";
  name += c.temperature > 0 ? "_sampled" : "_greedy";
  if (c.q4) name += "_q4";
  if (c.two_backends) name += "_two_backends";
  if (c.tree_nodes > 0) name += "_tree" + std::to_string(c.tree_nodes);
  return name;
}

class DraftedEqualsPlainCudaTest : public ::testing::TestWithParam<Case> {};

TEST_P(DraftedEqualsPlainCudaTest, SameTokens) {
  const Case& c = GetParam();
  const std::string target_dir = twinspan::testing::GoldenPath(c.target);
  const std::unique_ptr<backend::Backend> gpu = Cuda();
  ASSERT_NE(gpu, nullptr);
  std::unique_ptr<backend::Backend> second;
  if (c.two_backends) second = Cuda();
  backend::Backend* drafter_backend = c.two_backends ? second.get() : gpu.get();
  ASSERT_NE(drafter_backend, nullptr);
  auto target = target::OpenTargetModel(target_dir, {.backend = gpu.get(), .context = 256});
  ASSERT_TRUE(target.ok()) << target.status();
  const std::string drafter_dir = twinspan::testing::WriteRandomDrafter(
      std::string("twinspan_drafter_cuda_") + (c.dflash2 ? "v2" : "v1"), c.dflash2,
      c.dflash2 ? 7 : 8);
  const DrafterModelOptions model{.backend = drafter_backend,
                                  .context = 256,
                                  .linear_bits = c.q4 ? LinearBits::kQ4 : LinearBits::kAsStored};
  auto drafter =
      Drafter::Open(drafter_dir, target_dir, {.model = model, .head = "0:2048,3968:4096"});
  ASSERT_TRUE(drafter.ok()) << drafter.status();
  testing::ExpectDraftedEqualsPlain(**target, **drafter, c.temperature, c.tree_nodes);
}

INSTANTIATE_TEST_SUITE_P(
    Families, DraftedEqualsPlainCudaTest,
    ::testing::Values(
        Case{"hf_qwen3_tiny/model", false, 0.0f}, Case{"hf_qwen3_tiny/model", true, 0.0f},
        Case{"hf_qwen3_tiny/model", true, 0.8f}, Case{"hf_qwen3_tiny/model", false, 0.8f},
        Case{"hf_qwen3_5_tiny/model", true, 0.0f}, Case{"hf_qwen3_5_tiny/model", true, 0.8f},
        Case{"hf_qwen3_5_tiny/model", false, 0.0f, true},
        Case{"hf_qwen3_5_tiny/model", true, 0.8f, true}, Case{"exl3_qwen3_5_tiny", true, 0.0f},
        Case{"exl3_qwen3_5_tiny", true, 0.8f, true},
        Case{"hf_qwen3_5_tiny/model", true, 0.8f, false, true},
        Case{"exl3_qwen3_5_tiny", true, 0.0f, true, true},
        Case{"hf_qwen3_tiny/model", true, 0.0f, false, false, 15},
        Case{"hf_qwen3_tiny/model", true, 0.8f, false, false, 9},
        Case{"hf_qwen3_5_tiny/model", true, 0.0f, false, false, 15},
        Case{"hf_qwen3_5_tiny/model", true, 0.8f, false, false, 31},
        Case{"exl3_qwen3_5_tiny", true, 0.0f, false, false, 15}),
    [](const ::testing::TestParamInfo<Case>& info) { return Name(info.param); });

}  // namespace
}  // namespace twinspan::drafter
