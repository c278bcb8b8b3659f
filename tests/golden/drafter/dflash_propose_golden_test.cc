// Golden data: z-lab/dflash dflash/model.py (DFlashDraftModel at 44947fb; DFlash2DraftModel,
// CandidateSelector and dflash_generate at 10129599) over golden/hf_qwen3_tiny, fp32 on the CPU;
// see golden/README.md sections 7 and 8.
#include <memory>
#include <string>
#include <vector>

#include "common/safetensors/checkpoint.h"
#include "gtest/gtest.h"
#include "services/drafter/drafter.h"
#include "services/target/target_model.h"
#include "tests/golden/drafter/golden_tensors.h"
#include "tests/testing/golden.h"
#include "tests/testing/speculative_loop.h"

namespace twinspan::drafter {
namespace {

using ::twinspan::testing::ExpectRelFro;
using ::twinspan::testing::Floats;
using ::twinspan::testing::GoldenPath;
using ::twinspan::testing::Ints;

constexpr double kTol = 1e-4;

std::vector<int32_t> Narrow(const std::vector<int64_t>& ids) { return {ids.begin(), ids.end()}; }

struct Fixture {
  std::unique_ptr<Drafter> drafter;
  std::unique_ptr<Checkpoint> reference;
  Proposal proposal;
};

// One Propose over the stored prompt taps, with the reference's anchor.
void ProposeOnce(const std::string& model_dir, const std::string& reference_file, bool as_v1,
                 Fixture& f) {
  auto drafter = Drafter::Open(GoldenPath(model_dir), GoldenPath("hf_qwen3_tiny/model"),
                               {.model = {.kv_dtype = cpu::KvDtype::kF32, .context = 64},
                                .head = "full",
                                .as_dflash_v1 = as_v1});
  ASSERT_TRUE(drafter.ok()) << drafter.status();
  f.drafter = std::move(*drafter);
  auto reference = Checkpoint::Open(GoldenPath(reference_file));
  ASSERT_TRUE(reference.ok()) << reference.status();
  f.reference = std::move(*reference);
  const std::vector<float> taps = Floats(*f.reference, "target_hidden");
  auto stream = f.drafter->NewStream();
  ASSERT_TRUE(stream.ok()) << stream.status();
  ASSERT_TRUE(f.drafter->AppendTaps(**stream, TapForm::kRaw, taps, 24).ok());
  const std::vector<int64_t> block = Ints(*f.reference, "block_ids");
  auto proposal =
      f.drafter->Propose(**stream, static_cast<int32_t>(block[0]), {.want_logits = true});
  ASSERT_TRUE(proposal.ok()) << proposal.status();
  f.proposal = std::move(*proposal);
}

TEST(DrafterProposeGoldenTest, DFlashV1LogitsAndDraftIds) {
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(ProposeOnce("dflash_drafter_tiny/model",
                                      "dflash_drafter_tiny/reference.safetensors", false, f));
  ExpectRelFro(f.proposal.logits, Floats(*f.reference, "draft_logits"), kTol, "draft_logits");
  EXPECT_EQ(f.proposal.ids, Narrow(Ints(*f.reference, "draft_token_ids")));
  EXPECT_EQ(f.proposal.column_ids.size(), 4096u);
}

TEST(DrafterProposeGoldenTest, DFlash2SelectorMatchesTheReference) {
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(ProposeOnce("dflash2_drafter_tiny/model",
                                      "dflash2_drafter_tiny/reference.safetensors", false, f));
  const Checkpoint& ref = *f.reference;
  ExpectRelFro(f.proposal.logits, Floats(ref, "draft_logits"), kTol, "draft_logits");
  EXPECT_EQ(f.proposal.candidate_ids, Narrow(Ints(ref, "selector_candidate_ids")));
  ExpectRelFro(f.proposal.candidate_logits, Floats(ref, "selector_unary"), kTol, "unary");
  ExpectRelFro(f.proposal.selector_projection, Floats(ref, "selector_hidden_projection"), kTol,
               "hidden_projection");
  ExpectRelFro(f.proposal.walk_scores, Floats(ref, "selector_walk_scores"), kTol, "walk scores");
  std::vector<int32_t> unary_argmax;
  for (size_t s = 0; s < 7; ++s) unary_argmax.push_back(f.proposal.candidate_ids[s * 8]);
  EXPECT_EQ(unary_argmax, Narrow(Ints(ref, "unary_argmax_ids")));
  EXPECT_EQ(f.proposal.ids, Narrow(Ints(ref, "draft_token_ids")));
}

TEST(DrafterProposeGoldenTest, DFlash2IdentityWalkEqualsUnaryArgmax) {
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(ProposeOnce("dflash2_drafter_tiny/model_identity",
                                      "dflash2_drafter_tiny/reference.safetensors", false, f));
  auto identity =
      Checkpoint::Open(GoldenPath("dflash2_drafter_tiny/reference_identity.safetensors"));
  ASSERT_TRUE(identity.ok()) << identity.status();
  const Checkpoint& ref = **identity;
  ExpectRelFro(f.proposal.logits, Floats(ref, "draft_logits"), kTol, "draft_logits");
  EXPECT_EQ(f.proposal.candidate_ids, Narrow(Ints(ref, "selector_candidate_ids")));
  ExpectRelFro(f.proposal.walk_scores, Floats(ref, "selector_walk_scores"), kTol, "walk scores");
  EXPECT_EQ(f.proposal.ids, Narrow(Ints(ref, "draft_token_ids")));
}

TEST(DrafterProposeGoldenTest, DFlash2SampledWalkReturnsProbabilitiesOverItsCandidates) {
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(ProposeOnce("dflash2_drafter_tiny/model",
                                      "dflash2_drafter_tiny/reference.safetensors", false, f));
  auto stream = f.drafter->NewStream();
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE(
      f.drafter->AppendTaps(**stream, TapForm::kRaw, Floats(*f.reference, "target_hidden"), 24)
          .ok());
  const std::vector<float> uniforms = {0.1f, 0.9f, 0.5f, 0.3f, 0.7f, 0.2f, 0.8f};
  auto sampled =
      f.drafter->Propose(**stream, 3587, {.temperature = 1.0f, .walk_uniforms = uniforms});
  ASSERT_TRUE(sampled.ok()) << sampled.status();
  ASSERT_EQ(sampled->probabilities.size(), 7u * 8u);
  for (size_t s = 0; s < 7; ++s) {
    float total = 0;
    bool chosen_is_candidate = false;
    for (size_t c = 0; c < 8; ++c) {
      total += sampled->probabilities[s * 8 + c];
      chosen_is_candidate |= sampled->candidate_ids[s * 8 + c] == sampled->ids[s];
    }
    EXPECT_NEAR(total, 1.0f, 1e-5f) << s;
    EXPECT_TRUE(chosen_is_candidate) << s;
  }
  // Same uniforms, same stream state: the same draws (the context was not changed by Propose).
  auto again = f.drafter->Propose(**stream, 3587, {.temperature = 1.0f, .walk_uniforms = uniforms});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ids, sampled->ids);
}

struct TargetAndDrafter {
  std::unique_ptr<target::TargetModel> target;
  std::unique_ptr<Drafter> drafter;
};

void OpenPair(const std::string& drafter_dir, TargetAndDrafter& pair) {
  auto target = target::OpenTargetModel(GoldenPath("hf_qwen3_tiny/model"),
                                        {.kv_dtype = cpu::KvDtype::kF32, .context = 128});
  ASSERT_TRUE(target.ok()) << target.status();
  pair.target = std::move(*target);
  auto drafter =
      Drafter::Open(GoldenPath(drafter_dir), GoldenPath("hf_qwen3_tiny/model"),
                    {.model = {.kv_dtype = cpu::KvDtype::kF32, .context = 128}, .head = "full"});
  ASSERT_TRUE(drafter.ok()) << drafter.status();
  pair.drafter = std::move(*drafter);
}

TEST(DrafterSpeculativeGoldenTest, DFlashV1GenerationIsTheReferences) {
  TargetAndDrafter pair;
  ASSERT_NO_FATAL_FAILURE(OpenPair("dflash_drafter_tiny/model", pair));
  auto reference = Checkpoint::Open(GoldenPath("dflash_drafter_tiny/reference.safetensors"));
  ASSERT_TRUE(reference.ok());
  const std::vector<int32_t> prompt = Narrow(Ints(**reference, "prompt_ids"));
  auto result = SpeculativeGenerate(*pair.target, *pair.drafter, prompt, 24);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->output_ids, Narrow(Ints(**reference, "spec_generate_output_ids")));
  EXPECT_EQ(result->round_proposals[0], Narrow(Ints(**reference, "draft_token_ids")));
}

void ExpectDFlash2Generation(const std::string& drafter_dir, const std::string& reference_file) {
  TargetAndDrafter pair;
  ASSERT_NO_FATAL_FAILURE(OpenPair(drafter_dir, pair));
  auto reference = Checkpoint::Open(GoldenPath(reference_file));
  ASSERT_TRUE(reference.ok());
  const Checkpoint& ref = **reference;
  const std::vector<int32_t> prompt = Narrow(Ints(ref, "prompt_ids"));
  auto result = SpeculativeGenerate(*pair.target, *pair.drafter, prompt, 24);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->output_ids, Narrow(Ints(ref, "spec_generate_output_ids")));
  EXPECT_EQ(result->accept_lengths, Ints(ref, "spec_accept_lengths"));
  const std::vector<int64_t> proposals = Ints(ref, "spec_round_proposals");  // [23, 7], -1 padded
  ASSERT_EQ(result->round_proposals.size(), 23u);
  for (size_t r = 0; r < 23; ++r) {
    std::vector<int32_t> want;
    for (size_t s = 0; s < 7; ++s) {
      if (proposals[r * 7 + s] >= 0) want.push_back(static_cast<int32_t>(proposals[r * 7 + s]));
    }
    EXPECT_EQ(result->round_proposals[r], want) << "round " << r;
  }
  auto plain = PlainGenerate(*pair.target, prompt, 24);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(result->output_ids, *plain);
}

TEST(DrafterSpeculativeGoldenTest, DFlash2GenerationRoundsAndProposalsAreTheReferences) {
  ExpectDFlash2Generation("dflash2_drafter_tiny/model",
                          "dflash2_drafter_tiny/reference.safetensors");
}

TEST(DrafterSpeculativeGoldenTest, DFlash2IdentityGenerationIsTheReferences) {
  ExpectDFlash2Generation("dflash2_drafter_tiny/model_identity",
                          "dflash2_drafter_tiny/reference_identity.safetensors");
}

}  // namespace
}  // namespace twinspan::drafter
