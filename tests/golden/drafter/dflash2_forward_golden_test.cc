// Golden data: z-lab/dflash dflash/model.py (commit 10129599, DFlash2DraftModel and
// DFlashDraftModel) run in fp32 on the CPU over golden/hf_qwen3_tiny; see golden/README.md sections
// 7 and 8.
#include <memory>
#include <string>
#include <vector>

#include "common/safetensors/checkpoint.h"
#include "gtest/gtest.h"
#include "services/drafter/drafter_model.h"
#include "tests/golden/drafter/golden_tensors.h"
#include "tests/testing/golden.h"

namespace twinspan::drafter {
namespace {

using ::twinspan::testing::ExpectRelFro;
using ::twinspan::testing::Floats;
using ::twinspan::testing::GoldenPath;
using ::twinspan::testing::Slice;

constexpr double kTol = 1e-4;

struct BlockRun {
  std::unique_ptr<DrafterModel> model;
  std::unique_ptr<Checkpoint> reference;
  std::vector<float> context, hidden;
  BlockTrace trace;
};

// Feeds the stored taps and noise embedding through our drafter, as one prompt and one block.
void RunBlock(const std::string& model_dir, const std::string& reference_file, bool as_v1,
              BlockRun& run) {
  auto model = DrafterModel::Open(GoldenPath(model_dir),
                                  {.kv_dtype = cpu::KvDtype::kF32, .context = 64}, as_v1);
  ASSERT_TRUE(model.ok()) << model.status();
  run.model = std::move(*model);
  auto reference = Checkpoint::Open(GoldenPath(reference_file));
  ASSERT_TRUE(reference.ok()) << reference.status();
  run.reference = std::move(*reference);
  const std::vector<float> taps = Floats(*run.reference, "target_hidden");
  const int64_t h = run.model->config().hidden_size;
  const int64_t rows = static_cast<int64_t>(taps.size()) / (2 * h);
  run.context.resize(rows * h);
  ASSERT_TRUE(run.model->FuseTaps(taps.data(), rows, run.context.data()).ok());
  auto stream = run.model->NewStream();
  ASSERT_TRUE(stream.ok()) << stream.status();
  ASSERT_TRUE(run.model->AppendContext(**stream, run.context.data(), rows).ok());
  const std::vector<float> noise = Floats(*run.reference, "noise_embedding");
  const int64_t block = static_cast<int64_t>(noise.size()) / h;
  run.hidden.resize(block * h);
  const absl::Status status =
      run.model->ForwardBlock(**stream, noise.data(), block, run.hidden.data(), &run.trace);
  ASSERT_TRUE(status.ok()) << status;
}

TEST(DrafterGoldenTest, DFlashV1ContextAndHiddenMatchTheReference) {
  BlockRun run;
  ASSERT_NO_FATAL_FAILURE(RunBlock("dflash_drafter_tiny/model",
                                   "dflash_drafter_tiny/reference.safetensors", false, run));
  ExpectRelFro(run.context, Floats(*run.reference, "context_fc_hidden_norm"), kTol, "context");
  const std::vector<float> layers = Floats(*run.reference, "drafter_layer_outputs");
  for (size_t l = 0; l < 2; ++l) {
    ExpectRelFro(run.trace.layer_outputs[l], Slice(layers, 2, l), kTol,
                 "layer " + std::to_string(l));
  }
  ExpectRelFro(run.hidden, Floats(*run.reference, "drafter_hidden"), kTol, "drafter_hidden");
}

TEST(DrafterGoldenTest, DFlash2EveryIntermediateMatchesTheReference) {
  BlockRun run;
  ASSERT_NO_FATAL_FAILURE(RunBlock("dflash2_drafter_tiny/model",
                                   "dflash2_drafter_tiny/reference.safetensors", false, run));
  const Checkpoint& ref = *run.reference;
  ExpectRelFro(run.context, Floats(ref, "context_fc_hidden_norm"), kTol, "context");
  const std::vector<std::pair<const char*, std::vector<std::vector<float>> BlockTrace::*>> fields =
      {{"layer_attn_norm", &BlockTrace::attn_norm},
       {"layer_attn_dynamic", &BlockTrace::attn_dynamic},
       {"layer_attn_conv_in", &BlockTrace::attn_conv_in},
       {"layer_attn_out", &BlockTrace::attn_out},
       {"layer_attn_conv_out", &BlockTrace::attn_conv_out},
       {"layer_mlp_norm", &BlockTrace::mlp_norm},
       {"layer_mlp_dynamic", &BlockTrace::mlp_dynamic},
       {"layer_mlp_conv_in", &BlockTrace::mlp_conv_in},
       {"layer_mlp_out", &BlockTrace::mlp_out},
       {"layer_mlp_conv_out", &BlockTrace::mlp_conv_out},
       {"drafter_layer_outputs", &BlockTrace::layer_outputs}};
  for (const auto& [name, field] : fields) {
    const std::vector<float> all = Floats(ref, name);
    ASSERT_EQ((run.trace.*field).size(), 2u) << name;
    for (size_t l = 0; l < 2; ++l) {
      ExpectRelFro((run.trace.*field)[l], Slice(all, 2, l), kTol,
                   std::string(name) + " layer " + std::to_string(l));
    }
  }
  ExpectRelFro(run.hidden, Floats(ref, "drafter_hidden"), kTol, "drafter_hidden");
}

TEST(DrafterGoldenTest, DFlash2IdentityMatchesTheReferenceAndItsV1Class) {
  BlockRun run;
  ASSERT_NO_FATAL_FAILURE(RunBlock("dflash2_drafter_tiny/model_identity",
                                   "dflash2_drafter_tiny/reference.safetensors", false, run));
  auto identity =
      Checkpoint::Open(GoldenPath("dflash2_drafter_tiny/reference_identity.safetensors"));
  ASSERT_TRUE(identity.ok()) << identity.status();
  ExpectRelFro(run.hidden, Floats(**identity, "drafter_hidden"), kTol, "drafter_hidden");
  ExpectRelFro(run.hidden, Floats(**identity, "dflash_v1_drafter_hidden"), kTol, "v1 hidden");
}

TEST(DrafterGoldenTest, DFlash2IdentityLoadedAsV1MatchesTheV1Class) {
  BlockRun run;
  ASSERT_NO_FATAL_FAILURE(RunBlock("dflash2_drafter_tiny/model_identity",
                                   "dflash2_drafter_tiny/reference.safetensors", true, run));
  EXPECT_EQ(run.model->config().kind, DrafterKind::kDFlash);
  EXPECT_FALSE(run.model->weights().selector.has_value());
  auto identity =
      Checkpoint::Open(GoldenPath("dflash2_drafter_tiny/reference_identity.safetensors"));
  ASSERT_TRUE(identity.ok()) << identity.status();
  ExpectRelFro(run.hidden, Floats(**identity, "dflash_v1_drafter_hidden"), kTol, "v1 hidden");
}

}  // namespace
}  // namespace twinspan::drafter
