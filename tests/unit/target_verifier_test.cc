// TargetVerifier's batched verify on random tiny targets of both families: VerifyBatch equals each
// sequence's own Verify bit for bit (the deferred taps too) and a bad job fails alone; through the
// lane engine, with a drafter that knows the plain output (so windows of several rows get partly
// accepted beside undrafted streams), concurrent == solo for 1, 2 and 4 streams, greedy and
// sampled; the device-sampling path (with the host LogitsSampler) draws the engine's tokens; and
// tap rows fused on the backend are the drafter's own FuseTaps; context-copy drafts and prefix
// reuse through the engine change no token, and a drafting stream resumes only the cached blocks
// its drafter holds.
#include "services/target/server/target_verifier.h"

#include <cstring>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/parallel.h"
#include "services/device/logits_sampler.h"
#include "services/drafter/drafter_model.h"
#include "services/target/engine/in_process_draft_channel.h"
#include "services/target/engine/lane_engine.h"
#include "services/target/prefix_cache.h"
#include "services/target/server/keyed_token_sampler.h"
#include "tests/golden/drafter/random_drafter.h"
#include "tests/unit/target_verifier_testing.h"

namespace twinspan::serving {
namespace {

using testing::Completions;
using testing::Family;
using testing::OracleDrafter;
using testing::Sink;

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

class TargetVerifierTest : public ::testing::TestWithParam<Family> {
 protected:
  void SetUp() override {
    target::TargetOptions options;
    options.backend = backend_.get();
    options.context = 256;
    model_ = testing::RandomTarget(GetParam(), options, 61);
    ASSERT_NE(model_, nullptr);
    const target::TargetConfig& c = model_->config();
    info_ = testing::RandomTargetInfo(*model_);
    verifier_ = std::make_unique<TargetVerifier>(model_.get(), info_, 7);
    taps_ = {0, c.num_layers - 1};
  }

  std::unique_ptr<engine::VerifierSequence> Prefilled(const std::vector<uint32_t>& prompt) {
    auto sequence = verifier_->NewSequence();
    EXPECT_TRUE(sequence.ok()) << sequence.status();
    engine::WindowOutput out;
    EXPECT_TRUE((*sequence)->Prefill(prompt, taps_, {}, &out).ok());
    return *std::move(sequence);
  }

  std::vector<uint32_t> Tokens(std::mt19937& rng, int n) {
    return testing::RandomIds(rng, n, info_.vocab_size);
  }

  engine::EngineRequest Request(int which) const {
    return testing::MixedRequest(which, info_.vocab_size);
  }

  // Runs `requests` all at once through an engine of `parallel` streams.
  std::vector<engine::StreamSummary> Run(int parallel, engine::DraftChannel* channel,
                                         const std::vector<engine::EngineRequest>& requests) {
    return testing::RunAll(*verifier_, sampler_.get(), parallel, channel, requests);
  }

  std::unique_ptr<backend::Backend> backend_ = cpu::NewCpuBackend(nullptr);
  std::unique_ptr<target::TargetModel> model_;
  engine::VerifierInfo info_;
  std::unique_ptr<TargetVerifier> verifier_;
  std::unique_ptr<engine::TokenSampler> sampler_ = MakeKeyedTokenSampler();
  std::vector<int64_t> taps_;
};

TEST_P(TargetVerifierTest, VerifyBatchEqualsEachSequencesOwnVerify) {
  std::mt19937 rng(5);
  std::vector<std::unique_ptr<engine::VerifierSequence>> batched, solo;
  for (int s = 0; s < 3; ++s) {
    const auto prompt = Tokens(rng, 2 + 9 * s);
    batched.push_back(Prefilled(prompt));
    solo.push_back(Prefilled(prompt));
  }
  for (int round = 0; round < 2; ++round) {
    std::vector<std::vector<uint32_t>> windows;
    std::vector<engine::WindowOutput> outs(3);
    std::vector<engine::VerifyJob> jobs;
    windows.reserve(3);
    for (int s = 0; s < 3; ++s) windows.push_back(Tokens(rng, 1 + (3 * s + round) % 6));
    for (int s = 0; s < 3; ++s) {
      const absl::Span<const int64_t> taps =
          s == 1 ? absl::Span<const int64_t>() : absl::MakeConstSpan(taps_);
      jobs.push_back({batched[s].get(), windows[s], taps, &outs[s], absl::OkStatus()});
    }
    verifier_->VerifyBatch(absl::MakeSpan(jobs));
    for (int s = 0; s < 3; ++s) {
      SCOPED_TRACE(absl::StrCat("round ", round, ", sequence ", s));
      ASSERT_TRUE(jobs[s].status.ok()) << jobs[s].status;
      engine::WindowOutput alone;
      const std::vector<int64_t> taps(jobs[s].tap_layer_ids.begin(), jobs[s].tap_layer_ids.end());
      ASSERT_TRUE(solo[s]->Verify(windows[s], taps, &alone).ok());
      EXPECT_EQ(outs[s].rows, alone.rows);
      EXPECT_TRUE(SameBits(outs[s].logits, alone.logits));
      EXPECT_TRUE(outs[s].tokens.empty());  // No sampler: the engine samples the logits.
      EXPECT_EQ(outs[s].taps_deferred, !taps.empty());
      EXPECT_EQ(outs[s].tap_width, static_cast<int64_t>(taps.size()) * info_.hidden_size);
      EXPECT_FALSE(outs[s].taps_fused);
      const int64_t keep = 1 + s % static_cast<int64_t>(windows[s].size());
      ASSERT_TRUE(batched[s]->Commit(keep).ok());
      ASSERT_TRUE(solo[s]->Commit(keep).ok());
      std::vector<float> kept(7, -1.0f), kept_alone(3, -2.0f);
      if (taps.empty()) {
        EXPECT_EQ(batched[s]->ReadTaps(keep, &kept).code(), absl::StatusCode::kFailedPrecondition);
        continue;
      }
      ASSERT_TRUE(batched[s]->ReadTaps(keep, &kept).ok());
      ASSERT_TRUE(solo[s]->ReadTaps(keep, &kept_alone).ok());
      EXPECT_EQ(kept.size(), static_cast<size_t>(keep * outs[s].tap_width));
      EXPECT_TRUE(SameBits(kept, kept_alone));
      EXPECT_EQ(batched[s]->ReadTaps(outs[s].rows + 1, &kept).code(),
                absl::StatusCode::kInvalidArgument);
    }
  }
}

// A sequence no TargetVerifier made.
class ForeignSequence : public engine::VerifierSequence {
 public:
  int64_t length() const override { return 0; }
  absl::Status Prefill(absl::Span<const uint32_t>, const std::vector<int64_t>&,
                       const engine::PrefillControl&, engine::WindowOutput*) override {
    return absl::OkStatus();
  }
  absl::Status Verify(absl::Span<const uint32_t>, const std::vector<int64_t>&,
                      engine::WindowOutput*) override {
    return absl::OkStatus();
  }
  absl::Status Commit(int64_t) override { return absl::OkStatus(); }
};

TEST_P(TargetVerifierTest, AJobThatFailsItsChecksFailsAlone) {
  std::mt19937 rng(6);
  const auto prompt = Tokens(rng, 4);
  auto good = Prefilled(prompt), twin = Prefilled(prompt), bad = Prefilled(prompt);
  ForeignSequence foreign;
  const std::vector<uint32_t> window = {1, 2}, out_of_vocab = {1, 4096};
  std::vector<engine::WindowOutput> outs(4);
  std::vector<engine::VerifyJob> jobs = {{good.get(), window, taps_, &outs[0], absl::OkStatus()},
                                         {bad.get(), out_of_vocab, {}, &outs[1], absl::OkStatus()},
                                         {&foreign, window, {}, &outs[2], absl::OkStatus()},
                                         {nullptr, window, {}, &outs[3], absl::OkStatus()}};
  verifier_->VerifyBatch(absl::MakeSpan(jobs));
  ASSERT_TRUE(jobs[0].status.ok()) << jobs[0].status;
  engine::WindowOutput alone;
  ASSERT_TRUE(twin->Verify(window, taps_, &alone).ok());
  EXPECT_TRUE(SameBits(outs[0].logits, alone.logits));
  std::vector<float> taps, taps_alone;
  ASSERT_TRUE(good->ReadTaps(2, &taps).ok());
  ASSERT_TRUE(twin->ReadTaps(2, &taps_alone).ok());
  EXPECT_TRUE(SameBits(taps, taps_alone));
  EXPECT_EQ(jobs[1].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(jobs[1].status.message().find("token id 4096"), std::string::npos) << jobs[1].status;
  EXPECT_EQ(jobs[2].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(jobs[3].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad->Commit(1).code(), absl::StatusCode::kInvalidArgument);  // Nothing is pending.
  EXPECT_EQ(bad->length(), 4);
}

TEST_P(TargetVerifierTest, EngineConcurrentEqualsSoloForOneTwoAndFourStreams) {
  std::vector<engine::EngineRequest> requests;
  requests.reserve(4);
  for (int which = 0; which < 4; ++which) requests.push_back(Request(which));
  Completions plain;
  for (const auto& r : requests) {  // Solo and without a drafter: plain decoding.
    const engine::StreamSummary s = Run(1, nullptr, {r})[0];
    plain[r.prompt_ids] = s.completion_ids;
    ASSERT_EQ(static_cast<int>(s.completion_ids.size()), r.max_tokens);
  }
  OracleDrafter oracle(4, info_, taps_, &plain);
  for (int parallel : {1, 2, 4}) {
    engine::InProcessDraftChannel channel(&oracle);
    const auto together = Run(parallel, &channel, requests);
    ASSERT_EQ(together.size(), requests.size());
    int64_t accepted = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      EXPECT_EQ(together[i].completion_ids, plain[requests[i].prompt_ids])
          << "parallel " << parallel << ", request " << i;
      EXPECT_EQ(together[i].drafted > 0, requests[i].draft) << "request " << i;
      accepted += together[i].accepted;
    }
    EXPECT_GT(accepted, 0) << "parallel " << parallel;  // Multi-row windows were kept.
  }
}

// Tree proposals through the engine: the kept path's rows (not a prefix) are committed and their
// taps read back, every row of a tree drawn at its depth's position; the tokens stay plain
// decoding's, and the trees accept more than their main chains alone.
TEST_P(TargetVerifierTest, EngineTreeDraftsEqualPlainForOneTwoAndFourStreams) {
  std::vector<engine::EngineRequest> requests;
  for (int which = 0; which < 4; ++which) requests.push_back(Request(which));
  Completions plain;
  for (const auto& r : requests) plain[r.prompt_ids] = Run(1, nullptr, {r})[0].completion_ids;
  OracleDrafter chains(5, info_, taps_, &plain), trees(5, info_, taps_, &plain, 8);
  for (int parallel : {1, 2, 4}) {
    engine::InProcessDraftChannel chain_channel(&chains), tree_channel(&trees);
    const auto by_chain = Run(parallel, &chain_channel, requests);
    const auto by_tree = Run(parallel, &tree_channel, requests);
    int64_t chain_accepted = 0, tree_accepted = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      EXPECT_EQ(by_tree[i].completion_ids, plain[requests[i].prompt_ids])
          << "parallel " << parallel << ", request " << i;
      chain_accepted += by_chain[i].accepted;
      tree_accepted += by_tree[i].accepted;
    }
    EXPECT_GT(tree_accepted, chain_accepted) << "parallel " << parallel;
  }
}

// With a LogitsSampler (here the host one, the CPU stand-in for the CUDA sampler) the verifier
// draws every row itself and hands back ids only: the draws are the keyed sampler's over the
// logits the plain verifier returns, a job with bad sampling fails alone, and through the engine
// every stream's tokens are plain decoding's.
TEST_P(TargetVerifierTest, DeviceSamplingDrawsWhatTheEngineDraws) {
  device::HostLogitsSampler host_sampler;
  TargetVerifierOptions options;
  options.prefill_chunk_rows = 7;
  options.sampler = &host_sampler;
  TargetVerifier sampling(model_.get(), info_, options);
  std::mt19937 rng(8);
  const auto prompt = Tokens(rng, 9);
  engine::SamplingOptions greedy, hot, bad;
  hot.temperature = 0.9f;
  hot.top_k = 20;
  hot.top_p = 0.9f;
  hot.seed = 77;
  bad.temperature = -1.0f;
  auto plain_seq = Prefilled(prompt);
  auto seq_a = *sampling.NewSequence(), seq_b = *sampling.NewSequence(),
       seq_c = *sampling.NewSequence();
  for (auto* seq : {seq_a.get(), seq_b.get(), seq_c.get()}) {
    engine::WindowOutput out;
    engine::PrefillControl control;
    control.sampling = &hot;
    ASSERT_TRUE(seq->Prefill(prompt, taps_, control, &out).ok());
    ASSERT_EQ(out.tokens.size(), 1u);
    EXPECT_TRUE(out.logits.empty());
  }
  const std::vector<uint32_t> window = Tokens(rng, 5);
  engine::WindowOutput plain_out;
  ASSERT_TRUE(plain_seq->Verify(window, taps_, &plain_out).ok());
  std::vector<engine::WindowOutput> outs(3);
  std::vector<engine::VerifyJob> jobs = {{seq_a.get(), window, taps_, &outs[0], {}, &greedy},
                                         {seq_b.get(), window, {}, &outs[1], {}, &bad},
                                         {seq_c.get(), window, taps_, &outs[2], {}, &hot}};
  sampling.VerifyBatch(absl::MakeSpan(jobs));
  ASSERT_TRUE(jobs[0].status.ok()) << jobs[0].status;
  EXPECT_EQ(jobs[1].status.code(), absl::StatusCode::kInvalidArgument) << jobs[1].status;
  ASSERT_TRUE(jobs[2].status.ok()) << jobs[2].status;
  const sampler::KeyedSampler keyed;
  for (int j : {0, 2}) {
    const engine::SamplingOptions& o = j == 0 ? greedy : hot;
    ASSERT_EQ(outs[j].tokens.size(), window.size());
    EXPECT_TRUE(outs[j].logits.empty());
    for (size_t r = 0; r < window.size(); ++r) {
      sampler::SamplingParams params;
      params.temperature = o.temperature;
      params.top_k = o.top_k;
      params.top_p = o.top_p;
      auto want = keyed.Sample(
          absl::MakeConstSpan(plain_out.logits).subspan(r * info_.vocab_size, info_.vocab_size),
          params, o.seed, static_cast<int64_t>(prompt.size() + r + 1));
      ASSERT_TRUE(want.ok());
      EXPECT_EQ(outs[j].tokens[r], static_cast<uint32_t>(*want)) << "job " << j << " row " << r;
    }
  }

  std::vector<engine::EngineRequest> requests;
  requests.reserve(4);
  for (int which = 0; which < 4; ++which) requests.push_back(Request(which));
  Completions plain;
  for (const auto& r : requests) plain[r.prompt_ids] = Run(1, nullptr, {r})[0].completion_ids;
  for (int parallel : {1, 2, 4}) {
    engine::EngineOptions eopt;
    eopt.parallel = parallel;
    auto engine = engine::LaneEngine::Start(eopt, &sampling, sampler_.get(), nullptr, nullptr);
    ASSERT_TRUE(engine.ok());
    std::vector<std::shared_ptr<Sink>> sinks;
    for (const auto& r : requests) {
      sinks.push_back(std::make_shared<Sink>());
      ASSERT_TRUE((*engine)->Submit(r, sinks.back()).ok());
    }
    for (size_t i = 0; i < sinks.size(); ++i) {
      auto summary = sinks[i]->Wait();
      ASSERT_TRUE(summary.ok()) << summary.status();
      EXPECT_EQ(summary->completion_ids, plain[requests[i].prompt_ids])
          << "parallel " << parallel << ", request " << i;
    }
  }
}

// With a TapFuser on the model's backend the verifier hands out fused rows, bit for bit
// DrafterModel::FuseTaps of the raw rows (CPU backend), from the prefill and from ReadTaps of a
// verify's kept rows; a job asking for other layers than the fuser reads fails alone.
TEST_P(TargetVerifierTest, FusedTapsAreTheDraftersOwnFuseTaps) {
  const std::string dir = twinspan::testing::WriteRandomDrafter(
      GetParam() == Family::kQwen3 ? "verifier_fuser_qwen3" : "verifier_fuser_qwen35", false, 21,
      info_.hidden_size, info_.vocab_size, taps_);
  auto fuser = engine::TapFuser::Open(dir, &model_->backend());
  ASSERT_TRUE(fuser.ok()) << fuser.status();
  auto drafter = drafter::DrafterModel::Open(dir, {});
  ASSERT_TRUE(drafter.ok()) << drafter.status();
  TargetVerifierOptions options;
  options.prefill_chunk_rows = 4;  // Several chunks, each fused on its own.
  options.fuser = fuser->get();
  TargetVerifier fusing(model_.get(), info_, options);
  const int64_t width = (*fuser)->fused_width();
  std::mt19937 rng(9);
  const auto prompt = Tokens(rng, 11);
  auto raw_seq = *verifier_->NewSequence();
  auto fused_seq = *fusing.NewSequence();
  engine::WindowOutput raw_out, fused_out;
  ASSERT_TRUE(raw_seq->Prefill(prompt, taps_, {}, &raw_out).ok());
  ASSERT_TRUE(fused_seq->Prefill(prompt, taps_, {}, &fused_out).ok());
  EXPECT_TRUE(fused_out.taps_fused);
  EXPECT_FALSE(fused_out.taps_deferred);
  EXPECT_EQ(fused_out.tap_width, width);
  std::vector<float> want(prompt.size() * width);
  ASSERT_TRUE((*drafter)->FuseTaps(raw_out.taps.data(), prompt.size(), want.data()).ok());
  EXPECT_TRUE(SameBits(fused_out.taps, want));

  const std::vector<uint32_t> window = Tokens(rng, 4);
  ASSERT_TRUE(raw_seq->Verify(window, taps_, &raw_out).ok());
  std::vector<engine::WindowOutput> outs(2);
  auto other = *fusing.NewSequence();
  engine::WindowOutput other_out;
  ASSERT_TRUE(other->Prefill(prompt, {}, {}, &other_out).ok());
  const std::vector<int64_t> wrong = {taps_[0]};
  std::vector<engine::VerifyJob> jobs = {{fused_seq.get(), window, taps_, &outs[0], {}, nullptr},
                                         {other.get(), window, wrong, &outs[1], {}, nullptr}};
  fusing.VerifyBatch(absl::MakeSpan(jobs));
  ASSERT_TRUE(jobs[0].status.ok()) << jobs[0].status;
  EXPECT_EQ(jobs[1].status.code(), absl::StatusCode::kInvalidArgument) << jobs[1].status;
  EXPECT_TRUE(outs[0].taps_fused && outs[0].taps_deferred);
  ASSERT_TRUE(raw_seq->Commit(3).ok());
  ASSERT_TRUE(fused_seq->Commit(3).ok());
  std::vector<float> raw_kept, fused_kept;
  ASSERT_TRUE(raw_seq->ReadTaps(3, &raw_kept).ok());
  ASSERT_TRUE(fused_seq->ReadTaps(3, &fused_kept).ok());
  std::vector<float> want_kept(3 * width);
  ASSERT_TRUE((*drafter)->FuseTaps(raw_kept.data(), 3, want_kept.data()).ok());
  EXPECT_TRUE(SameBits(fused_kept, want_kept));
}

// Context-copy drafts and prefix reuse through the engine change no token: prompts that repeat a
// run of ids (so the context repeats n-grams and copies are proposed), greedy and sampled, run
// plain (draft: false, no cache), with copies alone, with copies beside a drafter, and again on a
// verifier whose prefix cache resumes them; every completion is the plain one.
TEST_P(TargetVerifierTest, ContextCopyAndPrefixReuseChangeNoToken) {
  std::mt19937 rng(71);
  std::vector<engine::EngineRequest> requests;
  for (int which = 0; which < 4; ++which) {
    engine::EngineRequest r;
    r.request_id = absl::StrCat("copy-", which);
    const std::vector<uint32_t> run = Tokens(rng, 24 + 8 * which);
    for (int i = 0; i < 3; ++i) r.prompt_ids.insert(r.prompt_ids.end(), run.begin(), run.end());
    r.sampling.temperature = which % 2 == 0 ? 0.0f : 0.8f;
    r.sampling.seed = 500 + which;
    r.max_tokens = 60;
    r.ignore_eos = true;
    requests.push_back(r);
  }
  Completions plain;
  for (engine::EngineRequest r : requests) {
    r.draft = false;
    const engine::StreamSummary s = Run(1, nullptr, {r})[0];
    EXPECT_EQ(s.drafted, 0);
    plain[r.prompt_ids] = s.completion_ids;
  }
  auto check = [&](const std::vector<engine::StreamSummary>& got, const std::string& how) {
    int64_t copied = 0;
    ASSERT_EQ(got.size(), requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      EXPECT_EQ(got[i].completion_ids, plain[requests[i].prompt_ids]) << how << ", request " << i;
      EXPECT_LE(got[i].context_copy_accepted, got[i].context_copy_drafted);
      EXPECT_LE(got[i].context_copy_drafted, got[i].drafted);
      copied += got[i].context_copy_drafted;
    }
    EXPECT_GT(copied, 0) << how << ": no copy was verified";
  };
  check(Run(2, nullptr, requests), "copies alone");
  OracleDrafter oracle(4, info_, taps_, &plain);
  engine::InProcessDraftChannel channel(&oracle);
  check(Run(4, &channel, requests), "copies beside a drafter");

  auto cache = target::PrefixCache::Create(*model_, target::PrefixCacheOptions{64, 1 << 24});
  ASSERT_TRUE(cache.ok());
  TargetVerifierOptions options;
  options.prefill_chunk_rows = 7;
  options.prefix_cache = cache->get();
  TargetVerifier cached(model_.get(), info_, options);
  for (int pass = 0; pass < 2; ++pass) {
    const auto got = testing::RunAll(cached, sampler_.get(), 2, nullptr, requests);
    check(got, absl::StrCat("prefix cache, pass ", pass));
    for (size_t i = 0; i < got.size(); ++i) {
      const int64_t n = static_cast<int64_t>(requests[i].prompt_ids.size());
      EXPECT_EQ(got[i].cached_prompt_tokens, pass == 0 ? 0 : (n - 1) / 64 * 64) << i;
    }
  }
  EXPECT_EQ(cached.prefix_cache_use().blocks, (*cache)->stats().blocks);
  EXPECT_GT(cached.prefix_cache_use().bytes, 0u);
}

// A drafting stream resumes only the cached blocks its drafter holds: those of prompts it
// answered, on its link epoch. The first drafting stream after an undrafted run of the prompt, or
// after a drafter restart, prefills it again; one whose drafter lost the rows (this oracle keeps
// none) decodes undrafted and makes the next one prefill them again. Tokens never change.
TEST_P(TargetVerifierTest, ADrafterThatLacksAResumedPrefixIsGivenItByTheNextStream) {
  std::mt19937 rng(73);
  engine::EngineRequest r;
  r.request_id = "given";
  r.prompt_ids = Tokens(rng, 150);
  r.max_tokens = 24;
  r.ignore_eos = true;
  r.context_copy = false;  // only the drafter's drafts
  engine::EngineRequest off = r;
  off.draft = false;
  Completions plain;
  plain[r.prompt_ids] = Run(1, nullptr, {off})[0].completion_ids;
  OracleDrafter oracle(4, info_, taps_, &plain);
  engine::InProcessDraftChannel channel(&oracle);
  auto cache = target::PrefixCache::Create(*model_, target::PrefixCacheOptions{64, 1 << 24});
  ASSERT_TRUE(cache.ok());
  TargetVerifierOptions options;
  options.prefix_cache = cache->get();
  TargetVerifier cached(model_.get(), info_, options);
  struct Step {
    bool restart_drafter;
    bool draft;
    int cached_prompt_tokens;
    bool degraded;
  };
  const Step steps[] = {
      {false, false, 0, false},    // caches two blocks, held by no drafter
      {false, true, 0, false},     // prefills them again; the drafter answers, so holds them
      {false, true, 128, true},    // resumes them; the drafter lacks them after all
      {false, true, 0, false},     // forgotten for the drafter: prefilled and given again
      {false, false, 128, false},  // an undrafted stream resumes whatever is cached
      {true, true, 0, false},      // the restarted drafter holds nothing
      {false, true, 128, true},    // it answered the last one: resumed, and this oracle refuses
  };
  for (size_t i = 0; i < std::size(steps); ++i) {
    if (steps[i].restart_drafter) channel.Restart();
    const engine::StreamSummary s =
        testing::RunAll(cached, sampler_.get(), 1, &channel, {steps[i].draft ? r : off})[0];
    EXPECT_EQ(s.completion_ids, plain[r.prompt_ids]) << "step " << i;
    EXPECT_EQ(s.cached_prompt_tokens, steps[i].cached_prompt_tokens) << "step " << i;
    EXPECT_EQ(s.draft_degraded, steps[i].degraded) << "step " << i;
    EXPECT_EQ(s.drafted > 0, steps[i].draft && !steps[i].degraded) << "step " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, TargetVerifierTest,
                         ::testing::Values(Family::kQwen3, Family::kQwen35));

}  // namespace
}  // namespace twinspan::serving
