// TargetVerifier on the CUDA backend, the GPU half of the target server's device path: with the
// CUDA LogitsSampler every verify row is drawn on the GPU and equals sampler::KeyedSampler over
// the same model's downloaded logits (the CPU path), greedy and sampled; tap rows fused on the
// GPU by TapFuser equal DrafterModel::FuseTaps of the downloaded raw rows within 1e-5 (rel_fro;
// the GPU's Linear and RmsNorm sum in another order than the CPU's); and through the lane engine
// with a drafter that knows the plain output, drafted == plain and concurrent == solo for 1, 2
// and 4 streams on the GPU. Random tiny targets of both families (qwen3, and qwen3_5 with its
// Gated DeltaNet layers).
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cuda/cuda_backend.h"
#include "services/device/cuda_logits_sampler.h"
#include "services/draft_link/tap_fuser.h"
#include "services/drafter/drafter_model.h"
#include "services/target/engine/in_process_draft_channel.h"
#include "services/target/engine/lane_engine.h"
#include "services/target/server/keyed_token_sampler.h"
#include "services/target/server/target_verifier.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/golden/drafter/random_drafter.h"
#include "tests/unit/target_verifier_testing.h"

namespace twinspan::serving {
namespace {

using testing::Completions;
using testing::Family;
using testing::OracleDrafter;

class TargetVerifierCudaTest : public ::testing::TestWithParam<Family> {
 protected:
  void SetUp() override {
    auto backend = cuda::NewCudaBackend({});
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = std::move(*backend);
    target::TargetOptions options;
    options.backend = backend_.get();
    options.context = 256;
    model_ = testing::RandomTarget(GetParam(), options, 71);
    ASSERT_NE(model_, nullptr);
    const target::TargetConfig& c = model_->config();
    info_ = testing::RandomTargetInfo(*model_);
    info_.backend = backend_->name();
    taps_ = {0, c.num_layers - 1};
    auto sampler = device::CudaLogitsSampler::Create(0);
    ASSERT_TRUE(sampler.ok()) << sampler.status();
    device_sampler_ = std::move(*sampler);
    plain_ = std::make_unique<TargetVerifier>(model_.get(), info_, 5);
  }

  std::vector<uint32_t> Tokens(std::mt19937& rng, int n) {
    return testing::RandomIds(rng, n, info_.vocab_size);
  }

  engine::EngineRequest Request(int which) const {
    engine::EngineRequest r = testing::MixedRequest(which, info_.vocab_size);
    r.sampling.top_k = which == 3 ? 30 : 0;
    return r;
  }

  std::vector<engine::StreamSummary> Run(const engine::VerifierModel& model, int parallel,
                                         engine::DraftChannel* channel,
                                         const std::vector<engine::EngineRequest>& requests) {
    return testing::RunAll(model, sampler_.get(), parallel, channel, requests);
  }

  std::unique_ptr<backend::Backend> backend_;
  std::unique_ptr<target::TargetModel> model_;
  engine::VerifierInfo info_;
  std::vector<int64_t> taps_;
  std::unique_ptr<device::CudaLogitsSampler> device_sampler_;
  std::unique_ptr<TargetVerifier> plain_;  // Logits downloaded, sampled by the engine's sampler.
  std::unique_ptr<engine::TokenSampler> sampler_ = MakeKeyedTokenSampler();
};

TEST_P(TargetVerifierCudaTest, DeviceDrawsEqualTheHostSamplersOverTheSameLogits) {
  TargetVerifierOptions options;
  options.prefill_chunk_rows = 5;
  options.sampler = device_sampler_.get();
  TargetVerifier sampling(model_.get(), info_, options);
  std::mt19937 rng(3);
  for (const float temperature : {0.0f, 0.9f}) {
    engine::SamplingOptions o;
    o.temperature = temperature;
    o.top_p = temperature > 0 ? 0.95f : 1.0f;
    o.seed = 4242;
    const auto prompt = Tokens(rng, 13);
    auto host_seq = *plain_->NewSequence();
    auto device_seq = *sampling.NewSequence();
    engine::WindowOutput host_out, device_out;
    engine::PrefillControl control;
    control.sampling = &o;
    ASSERT_TRUE(host_seq->Prefill(prompt, taps_, {}, &host_out).ok());
    ASSERT_TRUE(device_seq->Prefill(prompt, taps_, control, &device_out).ok());
    ASSERT_EQ(device_out.tokens.size(), 1u);
    auto first = sampler_->Sample(host_out.logits, o, static_cast<int64_t>(prompt.size()));
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(device_out.tokens[0], *first);
    for (int round = 0; round < 4; ++round) {
      const std::vector<uint32_t> window = Tokens(rng, 1 + 5 * round);
      ASSERT_TRUE(host_seq->Verify(window, taps_, &host_out).ok());
      engine::VerifyJob job{device_seq.get(), window, taps_, &device_out, {}, &o, {}};
      sampling.VerifyBatch(absl::MakeSpan(&job, 1));
      ASSERT_TRUE(job.status.ok()) << job.status;
      ASSERT_EQ(device_out.tokens.size(), window.size());
      EXPECT_TRUE(device_out.logits.empty());  // Only ids came down.
      for (size_t r = 0; r < window.size(); ++r) {
        auto want = sampler_->Sample(
            absl::MakeConstSpan(host_out.logits).subspan(r * info_.vocab_size, info_.vocab_size), o,
            host_seq->length() + static_cast<int64_t>(r) + 1);
        ASSERT_TRUE(want.ok());
        EXPECT_EQ(device_out.tokens[r], *want) << "t " << temperature << " round " << round;
      }
      const int64_t keep = 1 + round % static_cast<int64_t>(window.size());
      ASSERT_TRUE(host_seq->Commit(keep).ok());
      ASSERT_TRUE(device_seq->Commit(keep).ok());
      std::vector<float> a, b;
      ASSERT_TRUE(host_seq->ReadTaps(keep, &a).ok());
      ASSERT_TRUE(device_seq->ReadTaps(keep, &b).ok());
      EXPECT_EQ(cuda::testing::BitMismatches(a, b), 0u);
    }
  }
  EXPECT_CUDA_CLEAN();
}

TEST_P(TargetVerifierCudaTest, TapsFusedOnTheGpuAreTheDraftersFuseTaps) {
  const std::string dir = twinspan::testing::WriteRandomDrafter(
      GetParam() == Family::kQwen3 ? "verifier_cuda_fuser_qwen3" : "verifier_cuda_fuser_qwen35",
      false, 23, info_.hidden_size, info_.vocab_size, taps_);
  auto fuser = engine::TapFuser::Open(dir, backend_.get());
  ASSERT_TRUE(fuser.ok()) << fuser.status();
  auto drafter = drafter::DrafterModel::Open(dir, {});  // On the CPU: the reference.
  ASSERT_TRUE(drafter.ok()) << drafter.status();
  TargetVerifierOptions options;
  options.prefill_chunk_rows = 4;
  options.fuser = fuser->get();
  TargetVerifier fusing(model_.get(), info_, options);
  const int64_t width = (*fuser)->fused_width();
  std::mt19937 rng(5);
  const auto prompt = Tokens(rng, 18);
  auto raw_seq = *plain_->NewSequence();
  auto fused_seq = *fusing.NewSequence();
  engine::WindowOutput raw_out, fused_out;
  ASSERT_TRUE(raw_seq->Prefill(prompt, taps_, {}, &raw_out).ok());
  ASSERT_TRUE(fused_seq->Prefill(prompt, taps_, {}, &fused_out).ok());
  ASSERT_TRUE(fused_out.taps_fused);
  std::vector<float> want(prompt.size() * width);
  ASSERT_TRUE((*drafter)->FuseTaps(raw_out.taps.data(), prompt.size(), want.data()).ok());
  EXPECT_LE(cuda::testing::RelFro(fused_out.taps, want), 1e-5);
  const std::vector<uint32_t> window = Tokens(rng, 6);
  ASSERT_TRUE(raw_seq->Verify(window, taps_, &raw_out).ok());
  ASSERT_TRUE(fused_seq->Verify(window, taps_, &fused_out).ok());
  ASSERT_TRUE(raw_seq->Commit(4).ok());
  ASSERT_TRUE(fused_seq->Commit(4).ok());
  std::vector<float> raw_kept, fused_kept(1, -1.0f);
  ASSERT_TRUE(raw_seq->ReadTaps(4, &raw_kept).ok());
  ASSERT_TRUE(fused_seq->ReadTaps(4, &fused_kept).ok());
  std::vector<float> want_kept(4 * width);
  ASSERT_TRUE((*drafter)->FuseTaps(raw_kept.data(), 4, want_kept.data()).ok());
  ASSERT_EQ(fused_kept.size(), want_kept.size());
  EXPECT_LE(cuda::testing::RelFro(fused_kept, want_kept), 1e-5);
  EXPECT_CUDA_CLEAN();
}

TEST_P(TargetVerifierCudaTest, DraftedEqualsPlainAndConcurrentEqualsSoloOnTheGpu) {
  TargetVerifierOptions options;
  options.prefill_chunk_rows = 5;
  options.sampler = device_sampler_.get();
  TargetVerifier sampling(model_.get(), info_, options);
  std::vector<engine::EngineRequest> requests;
  requests.reserve(4);
  for (int which = 0; which < 4; ++which) requests.push_back(Request(which));
  Completions plain;  // Solo, no drafter, sampled on the host from downloaded logits.
  for (const auto& r : requests) {
    const engine::StreamSummary s = Run(*plain_, 1, nullptr, {r})[0];
    plain[r.prompt_ids] = s.completion_ids;
    ASSERT_EQ(static_cast<int>(s.completion_ids.size()), r.max_tokens);
    // The same, sampled on the device.
    EXPECT_EQ(Run(sampling, 1, nullptr, {r})[0].completion_ids, s.completion_ids);
  }
  OracleDrafter oracle(5, info_, taps_, &plain);
  for (int parallel : {1, 2, 4}) {
    for (int repeat = 0; repeat < 2; ++repeat) {
      engine::InProcessDraftChannel channel(&oracle);
      const auto together = Run(sampling, parallel, &channel, requests);
      int64_t accepted = 0;
      for (size_t i = 0; i < requests.size(); ++i) {
        EXPECT_EQ(together[i].completion_ids, plain[requests[i].prompt_ids])
            << "parallel " << parallel << ", repeat " << repeat << ", request " << i;
        EXPECT_EQ(together[i].drafted > 0, requests[i].draft) << "request " << i;
        accepted += together[i].accepted;
      }
      EXPECT_GT(accepted, 0) << "parallel " << parallel;
    }
  }
  EXPECT_CUDA_CLEAN();
}

// Trees on the GPU: TreeAttention, the Gated DeltaNet tree kernels, the path commit (KvCopy, the
// gathered replay), the kept path's taps gathered on the device, and every row drawn on the device
// at its depth's position; the tokens stay plain decoding's for 1, 2 and 4 streams.
TEST_P(TargetVerifierCudaTest, TreeDraftsEqualPlainOnTheGpu) {
  TargetVerifierOptions options;
  options.prefill_chunk_rows = 5;
  options.sampler = device_sampler_.get();
  TargetVerifier sampling(model_.get(), info_, options);
  std::vector<engine::EngineRequest> requests;
  for (int which = 0; which < 4; ++which) requests.push_back(Request(which));
  Completions plain;
  for (const auto& r : requests)
    plain[r.prompt_ids] = Run(*plain_, 1, nullptr, {r})[0].completion_ids;
  OracleDrafter chains(6, info_, taps_, &plain), trees(6, info_, taps_, &plain, 10);
  for (int parallel : {1, 2, 4}) {
    engine::InProcessDraftChannel chain_channel(&chains), tree_channel(&trees);
    const auto by_chain = Run(sampling, parallel, &chain_channel, requests);
    const auto by_tree = Run(sampling, parallel, &tree_channel, requests);
    int64_t chain_accepted = 0, tree_accepted = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      EXPECT_EQ(by_tree[i].completion_ids, plain[requests[i].prompt_ids])
          << "parallel " << parallel << ", request " << i;
      chain_accepted += by_chain[i].accepted;
      tree_accepted += by_tree[i].accepted;
    }
    EXPECT_GT(tree_accepted, chain_accepted) << "parallel " << parallel;
  }
  EXPECT_CUDA_CLEAN();
}

INSTANTIATE_TEST_SUITE_P(Families, TargetVerifierCudaTest,
                         ::testing::Values(Family::kQwen3, Family::kQwen35));

}  // namespace
}  // namespace twinspan::serving
