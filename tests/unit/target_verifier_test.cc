// TargetVerifier's batched verify on random tiny targets of both families: VerifyBatch equals each
// sequence's own Verify bit for bit and a bad job fails alone; and through the lane engine, with a
// drafter that knows the plain output (so windows of several rows get partly accepted beside
// undrafted streams), concurrent == solo for 1, 2 and 4 streams, greedy and sampled.
#include "services/target/server/target_verifier.h"

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/parallel.h"
#include "services/engine/in_process_draft_channel.h"
#include "services/engine/lane_engine.h"
#include "services/target/server/keyed_token_sampler.h"
#include "tests/unit/target_random_model.h"
#include "tests/unit/target_random_qwen35.h"

namespace twinspan::serving {
namespace {

using Completions = std::map<std::vector<uint32_t>, std::vector<uint32_t>>;

// Proposes the plain completion of its prompt (known in advance), every third proposal wrong.
class OracleSession : public engine::DraftSession {
 public:
  OracleSession(const engine::DrafterInfo* info, const Completions* plain)
      : info_(info), plain_(plain) {}
  absl::StatusOr<std::vector<uint32_t>> Open(absl::Span<const uint32_t> prompt,
                                             const engine::TapRows& taps,
                                             uint32_t /*pending*/) override {
    ABSL_RETURN_IF_ERROR(CheckTaps(prompt.size(), taps));
    prompt_.assign(prompt.begin(), prompt.end());
    return Propose();
  }
  absl::StatusOr<std::vector<uint32_t>> Commit(absl::Span<const uint32_t> ids,
                                               const engine::TapRows& taps,
                                               uint32_t /*pending*/) override {
    ABSL_RETURN_IF_ERROR(CheckTaps(ids.size(), taps));
    committed_ += static_cast<int64_t>(ids.size());
    return Propose();
  }

 private:
  absl::Status CheckTaps(size_t rows, const engine::TapRows& taps) const {
    if (taps.rows != static_cast<int64_t>(rows) || taps.width != info_->tap_width ||
        taps.data.size() != rows * taps.width) {
      return absl::InvalidArgumentError("oracle: taps of the wrong shape");
    }
    return absl::OkStatus();
  }
  std::vector<uint32_t> Propose() {
    auto it = plain_->find(prompt_);
    std::vector<uint32_t> out;
    for (int i = 1; i < info_->block_size; ++i) {
      const size_t next = static_cast<size_t>(committed_ + i);  // completion[committed_] pends.
      uint32_t id = it != plain_->end() && next < it->second.size() ? it->second[next] : 0;
      if (++proposed_ % 3 == 0) id = (id + 1) % info_->vocab_size;
      out.push_back(id);
    }
    return out;
  }

  const engine::DrafterInfo* info_;
  const Completions* plain_;
  std::vector<uint32_t> prompt_;
  int64_t committed_ = 0;
  int64_t proposed_ = 0;
};

class OracleDrafter : public engine::DraftModel {
 public:
  OracleDrafter(engine::DrafterInfo info, const Completions* plain)
      : info_(std::move(info)), plain_(plain) {}
  const engine::DrafterInfo& info() const override { return info_; }
  absl::StatusOr<std::unique_ptr<engine::DraftSession>> NewSession() const override {
    return std::make_unique<OracleSession>(&info_, plain_);
  }

 private:
  engine::DrafterInfo info_;
  const Completions* plain_;
};

class Sink : public engine::StreamSink {
 public:
  engine::SinkVerdict OnTokens(absl::Span<const uint32_t> ids, uint32_t) override {
    return {static_cast<int>(ids.size()), false};
  }
  void OnFinish(absl::StatusOr<engine::StreamSummary> summary) override {
    absl::MutexLock lock(&mu_);
    result_ = std::move(summary);
    done_ = true;
  }
  bool Cancelled() const override { return false; }
  absl::StatusOr<engine::StreamSummary> Wait() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
    return result_;
  }

 private:
  absl::Mutex mu_;
  bool done_ = false;
  absl::StatusOr<engine::StreamSummary> result_ = absl::UnknownError("unfinished");
};

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

enum class Family { kQwen3, kQwen35 };

class TargetVerifierTest : public ::testing::TestWithParam<Family> {
 protected:
  void SetUp() override {
    target::TargetOptions options;
    options.backend = backend_.get();
    options.context = 256;
    if (GetParam() == Family::kQwen3) {
      model_ = target::testing::RandomQwen3Model(options, 61);
    } else {
      const target::TargetConfig config = target::testing::TinyQwen35Config();
      auto model = target::Qwen35Model::Create(
          config, target::testing::RandomQwen35Weights(config, 62), options);
      ASSERT_TRUE(model.ok()) << model.status();
      model_ = std::move(*model);
    }
    ASSERT_NE(model_, nullptr);
    const target::TargetConfig& c = model_->config();
    info_.model_name = "random";
    info_.model_type = c.model_type;
    info_.vocab_size = static_cast<int>(c.vocab_size);
    info_.max_context = 256;
    info_.hidden_size = static_cast<int>(c.hidden_size);
    verifier_ = std::make_unique<TargetVerifier>(model_.get(), info_, 7);
    taps_ = {0, c.num_layers - 1};
  }

  std::unique_ptr<engine::VerifierSequence> Prefilled(const std::vector<uint32_t>& prompt) {
    auto sequence = verifier_->NewSequence();
    EXPECT_TRUE(sequence.ok()) << sequence.status();
    engine::WindowOutput out;
    EXPECT_TRUE((*sequence)->Prefill(prompt, taps_, &out).ok());
    return *std::move(sequence);
  }

  std::vector<uint32_t> Tokens(std::mt19937& rng, int n) {
    std::vector<uint32_t> ids(n);
    for (uint32_t& id : ids) id = rng() % info_.vocab_size;
    return ids;
  }

  engine::EngineRequest Request(int which) const {
    engine::EngineRequest r;
    r.request_id = absl::StrCat("req-", which);
    for (int i = 0; i < 3 + 4 * which; ++i) {
      r.prompt_ids.push_back((which * 37 + i * 11) % info_.vocab_size);
    }
    r.sampling.temperature = which % 2 == 0 ? 0.0f : 0.8f;
    r.sampling.seed = 900 + which;
    r.max_tokens = 17 + 5 * which;
    r.ignore_eos = true;
    r.draft = which != 2;  // An undrafted stream's one-row windows ride with the others.
    return r;
  }

  // Runs `requests` all at once through an engine of `parallel` streams.
  std::vector<engine::StreamSummary> Run(int parallel, engine::DraftChannel* channel,
                                         const std::vector<engine::EngineRequest>& requests) {
    engine::EngineOptions options;
    options.parallel = parallel;
    options.draft_timeout = absl::Seconds(10);
    auto engine =
        engine::LaneEngine::Start(options, verifier_.get(), sampler_.get(), channel, nullptr);
    EXPECT_TRUE(engine.ok()) << engine.status();
    std::vector<std::shared_ptr<Sink>> sinks;
    for (const auto& r : requests) {
      sinks.push_back(std::make_shared<Sink>());
      EXPECT_TRUE((*engine)->Submit(r, sinks.back()).ok());
    }
    std::vector<engine::StreamSummary> out;
    for (auto& sink : sinks) {
      auto summary = sink->Wait();
      EXPECT_TRUE(summary.ok()) << summary.status();
      out.push_back(summary.ok() ? *summary : engine::StreamSummary{});
    }
    return out;
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
      EXPECT_TRUE(SameBits(outs[s].taps, alone.taps));
      const int64_t keep = 1 + s % static_cast<int64_t>(windows[s].size());
      ASSERT_TRUE(batched[s]->Commit(keep).ok());
      ASSERT_TRUE(solo[s]->Commit(keep).ok());
    }
  }
}

// A sequence no TargetVerifier made.
class ForeignSequence : public engine::VerifierSequence {
 public:
  int64_t length() const override { return 0; }
  absl::Status Prefill(absl::Span<const uint32_t>, const std::vector<int64_t>&,
                       engine::WindowOutput*) override {
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
  EXPECT_TRUE(SameBits(outs[0].taps, alone.taps));
  EXPECT_EQ(jobs[1].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(jobs[1].status.message().find("token id 4096"), std::string::npos) << jobs[1].status;
  EXPECT_EQ(jobs[2].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(jobs[3].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad->Commit(1).code(), absl::StatusCode::kInvalidArgument);  // Nothing is pending.
  EXPECT_EQ(bad->length(), 4);
}

TEST_P(TargetVerifierTest, EngineConcurrentEqualsSoloForOneTwoAndFourStreams) {
  std::vector<engine::EngineRequest> requests;
  for (int which = 0; which < 4; ++which) requests.push_back(Request(which));
  Completions plain;
  for (const auto& r : requests) {  // Solo and without a drafter: plain decoding.
    const engine::StreamSummary s = Run(1, nullptr, {r})[0];
    plain[r.prompt_ids] = s.completion_ids;
    ASSERT_EQ(static_cast<int>(s.completion_ids.size()), r.max_tokens);
  }
  engine::DrafterInfo drafter;
  drafter.block_size = 4;
  drafter.head_variant = "oracle";
  drafter.vocab_size = info_.vocab_size;
  drafter.target_layer_ids = taps_;
  drafter.tap_width = static_cast<int>(taps_.size()) * info_.hidden_size;
  drafter.max_streams = 16;
  drafter.max_context = 1 << 20;
  OracleDrafter oracle(drafter, &plain);
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

INSTANTIATE_TEST_SUITE_P(Families, TargetVerifierTest,
                         ::testing::Values(Family::kQwen3, Family::kQwen35));

}  // namespace
}  // namespace twinspan::serving
