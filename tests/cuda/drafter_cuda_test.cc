// The drafter (services/drafter) on the CUDA backend, against z-lab/dflash's golden outputs and
// against the same drafter on the CPU backend (NewCpuBackend):
//  - golden/dflash_drafter_tiny and dflash2_drafter_tiny (model and model_identity) over
//    golden/hf_qwen3_tiny (z-lab/dflash dflash/model.py at 44947fb / 10129599, fp32 CPU; README
//    sections 7 and 8), f32 K/V: one Propose over the stored prompt taps: logits, unary, the
//    selector projection and walk scores rel_fro <= 1e-4 against the reference (its tolerance),
//    candidates and proposals exactly; the same Propose on the CPU backend within rel_fro 1e-5
//    (the CUDA ops' sum orders; docs/cuda.md) with equal ids; the speculative loop with the
//    target on the same GPU: output ids, accept lengths and every round's proposals exactly (the
//    reference screened the target's and round 0's margins to >= 1e-3, far above 1e-5);
//  - taps appended from GPU memory (AppendTapsInBackend) equal host taps bit for bit;
//  - a Q4 drafter (linears quantized at load) on the GPU against the same on the CPU: rel_fro
//    <= 1e-5, equal ids;
//  - a drafter over a random EXL3 head (k 128, vocab 151,936, K = 3): on the GPU the two-span
//    head's logits equal the full head's at the same columns bit for bit, whether the span views
//    share a head the backend holds or were uploaded alone; against the CPU backend rel_fro
//    <= 1e-5 and equal ids.
// Needs a GPU; TWINSPAN_GOLDEN names the golden folder.
#include <memory>
#include <string>
#include <vector>

#include "common/safetensors/checkpoint.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "services/drafter/drafter.h"
#include "services/target/target_model.h"
#include "tests/cuda/drafter_cuda_util.h"
#include "tests/golden/drafter/golden_tensors.h"
#include "tests/golden/drafter/random_drafter.h"
#include "tests/testing/golden.h"
#include "tests/testing/speculative_loop.h"

namespace twinspan::drafter {
namespace {

using testing::Cuda;
using testing::ExpectCloseProposals;
using ::twinspan::testing::ExpectRelFro;
using ::twinspan::testing::Floats;
using ::twinspan::testing::GoldenPath;
using ::twinspan::testing::Ints;

constexpr double kGoldenTol = 1e-4, kBackendTol = 1e-5;
const char* const kTarget = "hf_qwen3_tiny/model";

std::vector<int32_t> Narrow(const std::vector<int64_t>& ids) { return {ids.begin(), ids.end()}; }

absl::StatusOr<std::unique_ptr<Drafter>> OpenGolden(backend::Backend& b, const std::string& dir,
                                                    LinearBits bits = LinearBits::kAsStored) {
  return Drafter::Open(GoldenPath(dir), GoldenPath(kTarget),
                       {.model = {.backend = &b,
                                  .kv_dtype = cpu::KvDtype::kF32,
                                  .context = 128,
                                  .linear_bits = bits},
                        .head = "full"});
}

// Appends the inputs' prompt taps and proposes after their anchor.
Proposal ProposeOnReference(const Drafter& d, const Checkpoint& inputs,
                            const ProposeOptions& options) {
  auto stream = d.NewStream();
  EXPECT_TRUE(stream.ok()) << stream.status();
  if (!stream.ok()) return {};
  const absl::Status s = d.AppendTaps(**stream, TapForm::kRaw, Floats(inputs, "target_hidden"), 24);
  EXPECT_TRUE(s.ok()) << s;
  auto p = d.Propose(**stream, static_cast<int32_t>(Ints(inputs, "block_ids")[0]), options);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : Proposal{};
}

// The identity model's reference stores its outputs only: the taps come from `inputs`.
struct GoldenCase {
  const char* name;
  const char* model;
  const char* reference;
  const char* inputs;
  bool dflash2;
};

class DrafterGoldenCudaTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(DrafterGoldenCudaTest, ProposeMatchesTheReferenceAndTheCpuBackend) {
  const GoldenCase& c = GetParam();
  auto ref = Checkpoint::Open(GoldenPath(c.reference));
  ASSERT_TRUE(ref.ok()) << ref.status();
  auto in = Checkpoint::Open(GoldenPath(c.inputs));
  ASSERT_TRUE(in.ok()) << in.status();
  const std::unique_ptr<backend::Backend> gpu = Cuda();
  ASSERT_NE(gpu, nullptr);
  const std::unique_ptr<backend::Backend> cpu = cpu::NewCpuBackend(nullptr);
  auto g = OpenGolden(*gpu, c.model);
  auto h = OpenGolden(*cpu, c.model);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(h.ok()) << h.status();
  const Proposal got = ProposeOnReference(**g, **in, {.want_logits = true});
  ExpectRelFro(got.logits, Floats(**ref, "draft_logits"), kGoldenTol, "draft_logits");
  EXPECT_EQ(got.ids, Narrow(Ints(**ref, "draft_token_ids")));
  if (c.dflash2) {
    EXPECT_EQ(got.candidate_ids, Narrow(Ints(**ref, "selector_candidate_ids")));
    ExpectRelFro(got.candidate_logits, Floats(**ref, "selector_unary"), kGoldenTol, "unary");
    ExpectRelFro(got.walk_scores, Floats(**ref, "selector_walk_scores"), kGoldenTol, "walk");
    if (std::string(c.name) == "dflash2") {
      ExpectRelFro(got.selector_projection, Floats(**ref, "selector_hidden_projection"), kGoldenTol,
                   "hidden_projection");
    }
  }
  ExpectCloseProposals(got, ProposeOnReference(**h, **in, {.want_logits = true}), kBackendTol);
  if (c.dflash2) {  // The sampled walk, with the uniforms from the host.
    const std::vector<float> u = {0.1f, 0.9f, 0.5f, 0.3f, 0.7f, 0.2f, 0.8f};
    const ProposeOptions sampled{.temperature = 1.0f, .walk_uniforms = u};
    ExpectCloseProposals(ProposeOnReference(**g, **in, sampled),
                         ProposeOnReference(**h, **in, sampled), kBackendTol);
  }
}

TEST_P(DrafterGoldenCudaTest, SpeculativeGenerationIsTheReferences) {
  const GoldenCase& c = GetParam();
  auto ref = Checkpoint::Open(GoldenPath(c.reference));
  ASSERT_TRUE(ref.ok()) << ref.status();
  const std::unique_ptr<backend::Backend> gpu = Cuda();
  ASSERT_NE(gpu, nullptr);
  auto target = target::OpenTargetModel(
      GoldenPath(kTarget), {.backend = gpu.get(), .kv_dtype = cpu::KvDtype::kF32, .context = 128});
  ASSERT_TRUE(target.ok()) << target.status();
  auto d = OpenGolden(*gpu, c.model);
  ASSERT_TRUE(d.ok()) << d.status();
  const std::vector<int32_t> prompt = Narrow(Ints(**ref, "prompt_ids"));
  auto result = SpeculativeGenerate(**target, **d, prompt, 24);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->output_ids, Narrow(Ints(**ref, "spec_generate_output_ids")));
  EXPECT_EQ(result->round_proposals[0], Narrow(Ints(**ref, "draft_token_ids")));
  if (!c.dflash2) return;  // The v1 reference stores round 0's proposals only.
  EXPECT_EQ(result->accept_lengths, Ints(**ref, "spec_accept_lengths"));
  const std::vector<int64_t> proposals = Ints(**ref, "spec_round_proposals");  // [23, 7], -1 pad
  ASSERT_EQ(result->round_proposals.size(), 23u);
  for (size_t r = 0; r < 23; ++r) {
    std::vector<int32_t> want;
    for (size_t s = 0; s < 7; ++s) {
      if (proposals[r * 7 + s] >= 0) want.push_back(static_cast<int32_t>(proposals[r * 7 + s]));
    }
    EXPECT_EQ(result->round_proposals[r], want) << "round " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Golden, DrafterGoldenCudaTest,
    ::testing::Values(GoldenCase{"dflash", "dflash_drafter_tiny/model",
                                 "dflash_drafter_tiny/reference.safetensors",
                                 "dflash_drafter_tiny/reference.safetensors", false},
                      GoldenCase{"dflash2", "dflash2_drafter_tiny/model",
                                 "dflash2_drafter_tiny/reference.safetensors",
                                 "dflash2_drafter_tiny/reference.safetensors", true},
                      GoldenCase{"dflash2_identity", "dflash2_drafter_tiny/model_identity",
                                 "dflash2_drafter_tiny/reference_identity.safetensors",
                                 "dflash2_drafter_tiny/reference.safetensors", true}),
    [](const ::testing::TestParamInfo<GoldenCase>& info) { return info.param.name; });

// Taps already on the GPU (a target's taps_out) append as host taps do, bit for bit.
TEST(DrafterTapsCudaTest, TapsInTheBackendEqualHostTaps) {
  auto ref = Checkpoint::Open(GoldenPath("dflash2_drafter_tiny/reference.safetensors"));
  ASSERT_TRUE(ref.ok()) << ref.status();
  const std::unique_ptr<backend::Backend> gpu = Cuda();
  ASSERT_NE(gpu, nullptr);
  auto d = OpenGolden(*gpu, "dflash2_drafter_tiny/model");
  ASSERT_TRUE(d.ok()) << d.status();
  const std::vector<float> taps = Floats(**ref, "target_hidden");
  auto on_gpu = gpu->UploadFloats(taps);
  ASSERT_TRUE(on_gpu.ok());
  auto stream = (*d)->NewStream();
  ASSERT_TRUE(stream.ok());
  const int64_t width = static_cast<int64_t>(taps.size()) / 24;
  // In two steps, the second from an offset: 10 rows, then 14.
  ASSERT_TRUE((*d)->AppendTapsInBackend(**stream, TapForm::kRaw, (*on_gpu)->floats(), 10).ok());
  ASSERT_TRUE(
      (*d)->AppendTapsInBackend(**stream, TapForm::kRaw, (*on_gpu)->floats() + 10 * width, 14)
          .ok());
  auto got = (*d)->Propose(**stream, static_cast<int32_t>(Ints(**ref, "block_ids")[0]),
                           {.want_logits = true});
  ASSERT_TRUE(got.ok()) << got.status();
  const Proposal want = ProposeOnReference(**d, **ref, {.want_logits = true});
  EXPECT_EQ(got->ids, want.ids);
  EXPECT_EQ(cuda::testing::BitMismatches(got->logits, want.logits), 0u);
}

TEST(DrafterQ4CudaTest, AQ4DrafterOnTheGpuEqualsTheCpuBackend) {
  auto ref = Checkpoint::Open(GoldenPath("dflash2_drafter_tiny/reference.safetensors"));
  ASSERT_TRUE(ref.ok()) << ref.status();
  const std::unique_ptr<backend::Backend> gpu = Cuda();
  ASSERT_NE(gpu, nullptr);
  const std::unique_ptr<backend::Backend> cpu = cpu::NewCpuBackend(nullptr);
  for (const char* model : {"dflash2_drafter_tiny/model", "dflash_drafter_tiny/model"}) {
    SCOPED_TRACE(model);
    auto g = OpenGolden(*gpu, model, LinearBits::kQ4);
    auto h = OpenGolden(*cpu, model, LinearBits::kQ4);
    ASSERT_TRUE(g.ok()) << g.status();
    ASSERT_TRUE(h.ok()) << h.status();
    ASSERT_TRUE((*g)->model().weights().layers[0].q_proj.is_q4());
    ExpectCloseProposals(ProposeOnReference(**g, **ref, {.want_logits = true}),
                         ProposeOnReference(**h, **ref, {.want_logits = true}), kBackendTol);
  }
}

// A random DFlash2 drafter over a random EXL3 head of the 27B's plan shape, on `b`.
class Exl3HeadDrafterCudaTest : public ::testing::Test {
 protected:
  static constexpr int64_t kHidden = 128, kVocab = 151936;
  void SetUp() override {
    dir_ = twinspan::testing::WriteRandomDrafter("twinspan_drafter_cuda_exl3", true, 3, kHidden,
                                                 kVocab, {0, 1});
    head_ = testing::MakeExl3Head("drafter_cuda_exl3_head", kHidden, kVocab, 3, 9);
    const std::vector<float> table = cuda::testing::RandomFloats(kVocab * kHidden, 10);
    auto e = cpu::EmbeddingTable::FromRaw(cpu::EmbeddingDtype::kF32, kVocab, kHidden, table.data(),
                                          table.size() * sizeof(float));
    ASSERT_TRUE(e.ok()) << e.status();
    embedding_ = *e;
  }
  Proposal Run(backend::Backend& b, const std::string& head) {
    auto model =
        DrafterModel::Open(dir_, {.backend = &b, .kv_dtype = cpu::KvDtype::kF32, .context = 64});
    EXPECT_TRUE(model.ok()) << model.status();
    if (!model.ok()) return {};
    auto d =
        Drafter::Create(std::move(*model), embedding_, cpu::LinearWeight::Exl3(head_.weight), head);
    EXPECT_TRUE(d.ok()) << d.status();
    if (!d.ok()) return {};
    auto stream = (*d)->NewStream();
    EXPECT_TRUE(stream.ok());
    const std::vector<float> taps = cuda::testing::RandomFloats(int64_t{5} * 2 * kHidden, 11);
    EXPECT_TRUE((*d)->AppendTaps(**stream, TapForm::kRaw, taps, 5).ok());
    auto p = (*d)->Propose(**stream, 1234, {.want_logits = true});
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *std::move(p) : Proposal{};
  }
  std::string dir_;
  testing::Exl3Head head_;
  cpu::EmbeddingTable embedding_;
};

TEST_F(Exl3HeadDrafterCudaTest, TwoSpanLogitsAreTheFullHeadsColumnsOnTheGpu) {
  const std::unique_ptr<backend::Backend> gpu = Cuda();
  ASSERT_NE(gpu, nullptr);
  const Proposal full = Run(*gpu, "full");
  const Proposal alone = Run(*gpu, "two-span");  // No head on the backend: the views' blocks.
  auto held = gpu->UploadLinear(cpu::LinearWeight::Exl3(head_.weight));
  ASSERT_TRUE(held.ok()) << held.status();
  const Proposal shared = Run(*gpu, "two-span");  // The views share the held head.
  ASSERT_EQ(alone.columns, 98304 + 288);
  ASSERT_EQ(alone.column_ids[98304], kVocab - 288);
  const int64_t rows = static_cast<int64_t>(alone.ids.size());
  std::vector<float> columns;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < alone.columns; ++c) {
      columns.push_back(full.logits[r * full.columns + alone.column_ids[c]]);
    }
  }
  EXPECT_EQ(cuda::testing::BitMismatches(alone.logits, columns), 0u);
  EXPECT_EQ(cuda::testing::BitMismatches(shared.logits, columns), 0u);
  EXPECT_EQ(alone.ids, shared.ids);
}

TEST_F(Exl3HeadDrafterCudaTest, EqualsTheCpuBackend) {
  const std::unique_ptr<backend::Backend> gpu = Cuda();
  ASSERT_NE(gpu, nullptr);
  cpu::ThreadPool pool(4);
  const std::unique_ptr<backend::Backend> cpu = cpu::NewCpuBackend(&pool);
  ExpectCloseProposals(Run(*gpu, "two-span"), Run(*cpu, "two-span"), kBackendTol);
}

}  // namespace
}  // namespace twinspan::drafter
