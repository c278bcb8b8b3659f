// The exactness contract on the lane engine, in one process: drafted == plain (greedy and sampled),
// concurrent == solo, repeat == first, and a drafter that dies mid-request changes nothing but
// speed; and a long prefill, a silent drafter and rounds all stop at the request's deadline.
#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/metrics/serving_metrics.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/structured/grammar_constraint.h"
#include "services/structured/prefix_matcher.h"
#include "services/target/engine/draft_window.h"
#include "services/target/engine/in_process_draft_channel.h"
#include "services/target/engine/lane_engine.h"
#include "services/target/engine/proposal_box.h"
#include "tests/integration/toy_models.h"

namespace twinspan::engine {
namespace {

using testing::ToyDrafter;
using testing::ToySampler;
using testing::ToyVerifier;

constexpr int kVocab = 97;
constexpr uint32_t kEos = 96;

class CollectingSink : public StreamSink {
 public:
  std::function<void(uint32_t round)> on_round;
  int stop_after = -1;  // emulate a stop string: keep only this many tokens in total

  SinkVerdict OnTokens(absl::Span<const uint32_t> ids, uint32_t round) override {
    if (on_round) on_round(round);
    absl::MutexLock lock(&mu_);
    int keep = static_cast<int>(ids.size());
    if (stop_after >= 0) keep = std::min<int>(keep, stop_after - static_cast<int>(seen_.size()));
    seen_.insert(seen_.end(), ids.begin(), ids.begin() + keep);
    return {keep, stop_after >= 0 && static_cast<int>(seen_.size()) >= stop_after};
  }
  void OnFinish(absl::StatusOr<StreamSummary> summary) override {
    absl::MutexLock lock(&mu_);
    result_ = std::move(summary);
    done_ = true;
  }
  bool Cancelled() const override { return cancelled.load(); }
  std::atomic<bool> cancelled{false};  // the client went away

  absl::StatusOr<StreamSummary> Wait() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
    return result_;
  }
  std::vector<uint32_t> seen() {
    absl::MutexLock lock(&mu_);
    return seen_;
  }

 private:
  absl::Mutex mu_;
  bool done_ = false;
  std::vector<uint32_t> seen_;
  absl::StatusOr<StreamSummary> result_ = absl::UnknownError("not finished");
};

EngineRequest MakeRequest(int which, float temperature, bool draft) {
  EngineRequest r;
  r.request_id = "req-" + std::to_string(which);
  for (int i = 0; i < 5 + which; ++i) r.prompt_ids.push_back((which * 31 + i * 7) % 90);
  r.sampling.temperature = temperature;
  r.sampling.seed = 1234 + which;
  r.max_tokens = 40;
  r.draft = draft;
  return r;
}

class EngineTest : public ::testing::Test {
 protected:
  ToyVerifier model_{kVocab, 512, kEos};
  ToyDrafter drafter_{kVocab, /*block_size=*/6, /*miss_every=*/4, /*tap_width=*/8};
  ToySampler sampler_;
  InProcessDraftChannel channel_{&drafter_};

  std::unique_ptr<LaneEngine> Start(int parallel, bool with_drafter, DraftWindowOptions window = {},
                                    metrics::ServingMetrics* metrics = nullptr) {
    EngineOptions options;
    options.parallel = parallel;
    options.draft_timeout = absl::Seconds(5);
    options.draft_window = window;
    auto engine =
        LaneEngine::Start(options, &model_, &sampler_, with_drafter ? &channel_ : nullptr, metrics);
    EXPECT_TRUE(engine.ok()) << engine.status();
    return *std::move(engine);
  }

  // Submits every request at once and returns their summaries in order.
  std::vector<StreamSummary> RunAll(LaneEngine& engine,
                                    const std::vector<EngineRequest>& requests) {
    std::vector<std::shared_ptr<CollectingSink>> sinks;
    for (const auto& r : requests) {
      sinks.push_back(std::make_shared<CollectingSink>());
      EXPECT_TRUE(engine.Submit(r, sinks.back()).ok());
    }
    std::vector<StreamSummary> out;
    for (auto& sink : sinks) {
      absl::StatusOr<StreamSummary> s = sink->Wait();
      EXPECT_TRUE(s.ok()) << s.status();
      if (s.ok()) {
        EXPECT_EQ(sink->seen(), s->completion_ids);
        out.push_back(*s);
      }
    }
    return out;
  }
};

TEST_F(EngineTest, DraftedEqualsPlainGreedyAndSampled) {
  for (float temperature : {0.0f, 0.8f}) {
    auto plain_engine = Start(1, false);
    auto draft_engine = Start(1, true);
    int64_t accepted = 0;
    for (int which = 0; which < 4; ++which) {
      auto plain = RunAll(*plain_engine, {MakeRequest(which, temperature, true)});
      auto drafted = RunAll(*draft_engine, {MakeRequest(which, temperature, true)});
      ASSERT_EQ(plain.size(), 1u);
      ASSERT_EQ(drafted.size(), 1u);
      EXPECT_EQ(plain[0].completion_ids, drafted[0].completion_ids) << "t=" << temperature;
      EXPECT_EQ(plain[0].drafted, 0);
      EXPECT_EQ(plain[0].head_variant, "none");
      EXPECT_GT(drafted[0].drafted, 0);
      accepted += drafted[0].accepted;
      EXPECT_EQ(drafted[0].tokens_per_round.size(), static_cast<size_t>(drafted[0].rounds));
    }
    if (temperature == 0.0f) EXPECT_GT(accepted, 0);
  }
}

// Observations and sum of the tokens-per-round histogram, over every label.
std::pair<uint64_t, double> TokensPerRoundHistogram(const prometheus::Registry& registry) {
  std::pair<uint64_t, double> total{0, 0};
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != "twinspan_spec_decode_tokens_per_round") continue;
    for (const prometheus::ClientMetric& m : family.metric) {
      total.first += m.histogram.sample_count;
      total.second += m.histogram.sample_sum;
    }
  }
  return total;
}

// A stop token met inside a round's accepted drafts ends the stream there: the round counts
// only the tokens it emitted, so tokens_per_round sums to the completion without the prefill's,
// in the reply and in the dashboard's histogram alike.
TEST_F(EngineTest, TokensPerRoundCountsOnlyEmittedTokensWhenAStopCutsARound) {
  auto registry = std::make_shared<prometheus::Registry>();
  metrics::ServingMetrics metrics(registry, "toy");
  auto draft_engine = Start(1, true, {}, &metrics);
  int cut_rounds = 0;
  uint64_t rounds = 0;
  uint64_t tokens = 0;
  const auto count = [&](const StreamSummary& s) {
    rounds += s.tokens_per_round.size();
    for (uint32_t n : s.tokens_per_round) tokens += n;
  };
  for (int which = 0; which < 4; ++which) {
    auto full = RunAll(*draft_engine, {MakeRequest(which, 0.0f, true)});
    ASSERT_EQ(full.size(), 1u);
    count(full[0]);
    const std::vector<uint32_t>& ids = full[0].completion_ids;
    for (size_t at = 2; at + 1 < ids.size(); ++at) {
      if (std::find(ids.begin(), ids.begin() + at, ids[at]) != ids.begin() + at) continue;
      EngineRequest request = MakeRequest(which, 0.0f, true);
      request.stop_token_ids = {ids[at]};
      auto stopped = RunAll(*draft_engine, {request});
      ASSERT_EQ(stopped.size(), 1u);
      count(stopped[0]);
      ASSERT_EQ(stopped[0].completion_ids,
                std::vector<uint32_t>(ids.begin(), ids.begin() + at + 1));
      uint32_t emitted = 0;
      for (uint32_t n : stopped[0].tokens_per_round) emitted += n;
      EXPECT_EQ(emitted, stopped[0].completion_ids.size() - 1) << which << " stop at " << at;
      size_t before = 0;  // rounds emit ids[before + 1 .. before + n]; cut: the stop is not last
      for (uint32_t n : full[0].tokens_per_round) {
        if (before + n >= at) {
          if (at < before + n) ++cut_rounds;
          break;
        }
        before += n;
      }
    }
  }
  EXPECT_GT(cut_rounds, 0);  // the case under test happened
  ASSERT_TRUE(draft_engine->WaitIdle(absl::Seconds(10)));
  const auto [observed, sum] = TokensPerRoundHistogram(*registry);
  EXPECT_EQ(observed, rounds);
  EXPECT_EQ(sum, static_cast<double>(tokens));
}

// The toy vocabulary as bytes for a grammar: id i is the character '!' + i, two-character ids
// near the end, and no bytes for EOS.
std::shared_ptr<const structured::VocabTrie> ToyTrie() {
  std::vector<std::optional<std::string>> bytes(kVocab);
  for (uint32_t id = 0; id < kEos; ++id) {
    bytes[id] = id < 94 ? std::string(1, static_cast<char>('!' + id)) : std::string("ab");
  }
  return std::make_shared<structured::VocabTrie>(bytes);
}

TEST_F(EngineTest, DraftedEqualsPlainUnderAGrammarAndTheOutputMatches) {
  // '!'..'Z' (ids 0..57) only, 5 to 30 of them: the toy's unmasked greedy drafts are often
  // outside it, so drafts are cut before verification as well as accepted.
  const std::string pattern = "[!-Z]{5,30}";
  structured::GrammarCompiler compiler(ToyTrie(), {kEos});
  auto matcher = structured::PrefixMatcher::Compile(pattern);
  ASSERT_TRUE(matcher.ok());
  for (float temperature : {0.0f, 0.8f}) {
    auto plain_engine = Start(1, false);
    auto draft_engine = Start(2, true);
    int64_t accepted = 0, drafted_total = 0;
    for (int which = 0; which < 4; ++which) {
      EngineRequest r = MakeRequest(which, temperature, true);
      r.max_tokens = 60;
      auto constraint = compiler.Compile({structured::GrammarKind::kRegex, pattern});
      ASSERT_TRUE(constraint.ok()) << constraint.status();
      r.constraint = *std::move(constraint);
      auto plain = RunAll(*plain_engine, {r});
      auto drafted = RunAll(*draft_engine, {r, r});  // two concurrent copies, each its own state
      ASSERT_EQ(plain.size(), 1u);
      ASSERT_EQ(drafted.size(), 2u);
      EXPECT_EQ(plain[0].completion_ids, drafted[0].completion_ids) << "t=" << temperature;
      EXPECT_EQ(drafted[1].completion_ids, drafted[0].completion_ids);
      EXPECT_EQ(plain[0].finish_reason, FinishReason::kEos);
      ASSERT_FALSE(plain[0].completion_ids.empty());
      EXPECT_EQ(plain[0].completion_ids.back(), kEos);
      std::string text;
      for (size_t i = 0; i + 1 < plain[0].completion_ids.size(); ++i) {
        text.push_back(static_cast<char>('!' + plain[0].completion_ids[i]));
      }
      EXPECT_TRUE(*(*matcher)->IsComplete(text)) << text;
      accepted += drafted[0].accepted;
      drafted_total += drafted[0].drafted;
    }
    EXPECT_GT(drafted_total, 0);
    if (temperature == 0.0f) EXPECT_GT(accepted, 0);
  }
}

// ToyDrafter's sessions with every proposal replaced by EOS: drafts that end the output.
class EosDrafter : public DraftModel {
 public:
  explicit EosDrafter(const DraftModel* inner) : inner_(inner) {}
  const DrafterInfo& info() const override { return inner_->info(); }
  absl::StatusOr<std::unique_ptr<DraftSession>> NewSession() const override {
    absl::StatusOr<std::unique_ptr<DraftSession>> session = inner_->NewSession();
    if (!session.ok()) return session.status();
    return std::make_unique<Session>(*std::move(session));
  }

 private:
  class Session : public DraftSession {
   public:
    explicit Session(std::unique_ptr<DraftSession> inner) : inner_(std::move(inner)) {}
    absl::StatusOr<DraftProposal> Open(absl::Span<const uint32_t> prompt_ids,
                                       const TapRows& prompt_taps, uint32_t pending) override {
      return AllEos(inner_->Open(prompt_ids, prompt_taps, pending));
    }
    absl::StatusOr<DraftProposal> Commit(absl::Span<const uint32_t> ids, const TapRows& taps,
                                         uint32_t pending) override {
      return AllEos(inner_->Commit(ids, taps, pending));
    }

   private:
    static absl::StatusOr<DraftProposal> AllEos(absl::StatusOr<DraftProposal> drafts) {
      if (drafts.ok()) std::fill(drafts->ids.begin(), drafts->ids.end(), kEos);
      return drafts;
    }
    std::unique_ptr<DraftSession> inner_;
  };
  const DraftModel* inner_;
};

TEST_F(EngineTest, ADraftThatEndsTheOutputUnderAGrammarKeepsEveryRowMasked) {
  // Once the output matches, EOS is an allowed draft and nothing may follow it: the window must
  // still mask its last row, or that row draws an id outside the grammar.
  const std::string pattern = "[!-Z]{1,30}";
  structured::GrammarCompiler compiler(ToyTrie(), {kEos});
  EosDrafter eos_drafter(&drafter_);
  InProcessDraftChannel eos_channel(&eos_drafter);
  EngineOptions options;
  options.draft_timeout = absl::Seconds(5);
  auto plain_engine = Start(1, false);
  auto draft_engine = LaneEngine::Start(options, &model_, &sampler_, &eos_channel, nullptr);
  ASSERT_TRUE(draft_engine.ok()) << draft_engine.status();
  // Every round after the first offers EOS where the output already matches: the EOS draft is cut
  // (nothing can follow it) and the window's one row draws under the grammar's mask.
  for (float temperature : {0.0f, 0.8f}) {
    for (int which = 0; which < 4; ++which) {
      EngineRequest r = MakeRequest(which, temperature, true);
      r.max_tokens = 60;
      auto constraint = compiler.Compile({structured::GrammarKind::kRegex, pattern});
      ASSERT_TRUE(constraint.ok()) << constraint.status();
      r.constraint = *std::move(constraint);
      auto plain = RunAll(*plain_engine, {r});
      auto with_eos_drafts = RunAll(**draft_engine, {r});
      ASSERT_EQ(plain.size(), 1u);
      ASSERT_EQ(with_eos_drafts.size(), 1u) << "t=" << temperature << " request " << which;
      EXPECT_EQ(plain[0].completion_ids, with_eos_drafts[0].completion_ids) << "t=" << temperature;
    }
  }
}

// A window only cuts how many proposals a round verifies: every window gives plain's tokens, and
// a count window never verifies more than its count.
TEST_F(EngineTest, DraftWindowsChangeNoTokenAndCapTheDraftsARoundVerifies) {
  for (const char* text : {"all", "adaptive", "2", "1"}) {
    const absl::StatusOr<DraftWindowOptions> window = ParseDraftWindow(text);
    ASSERT_TRUE(window.ok()) << window.status();
    for (float temperature : {0.0f, 0.8f}) {
      SCOPED_TRACE(std::string("--draft-window ") + text + " t=" + std::to_string(temperature));
      auto plain_engine = Start(1, false);
      auto draft_engine = Start(1, true, *window);
      for (int which = 0; which < 3; ++which) {
        auto plain = RunAll(*plain_engine, {MakeRequest(which, temperature, true)});
        auto drafted = RunAll(*draft_engine, {MakeRequest(which, temperature, true)});
        ASSERT_EQ(plain.size(), 1u);
        ASSERT_EQ(drafted.size(), 1u);
        EXPECT_EQ(plain[0].completion_ids, drafted[0].completion_ids);
        EXPECT_GT(drafted[0].drafted, 0);
        if (window->max_drafts > 0) {
          EXPECT_LE(drafted[0].drafted, int64_t{window->max_drafts} * drafted[0].rounds);
          for (uint32_t kept : drafted[0].tokens_per_round) {
            EXPECT_LE(kept, static_cast<uint32_t>(window->max_drafts) + 1);
          }
        }
      }
    }
  }
}

TEST(DraftWindowTest, ParsesItsValuesAndNamesTheFlagOnBadOnes) {
  for (const char* text : {"all", "adaptive", "1", "16"}) {
    const absl::StatusOr<DraftWindowOptions> window = ParseDraftWindow(text);
    ASSERT_TRUE(window.ok()) << text << ": " << window.status();
    EXPECT_EQ(DraftWindowName(*window), text);
  }
  for (const char* text : {"", "0", "-3", "auto", "some", "2x"}) {
    const absl::StatusOr<DraftWindowOptions> window = ParseDraftWindow(text);
    ASSERT_TRUE(absl::IsInvalidArgument(window.status())) << text;
    EXPECT_NE(window.status().message().find("--draft-window"), std::string::npos);
    EXPECT_NE(window.status().message().find("adaptive"), std::string::npos);
  }
}

TEST(DraftWindowTest, AllAndCountWindowsKeepWhatTheyAllow) {
  DraftWindow all(*ParseDraftWindow("all"));
  DraftWindow three(*ParseDraftWindow("3"));
  for (int round = 0; round < 5; ++round) {
    all.Record(8, 0);
    three.Record(3, 0);
  }
  EXPECT_EQ(all.Size(15), 15);
  EXPECT_EQ(all.Size(0), 0);
  EXPECT_EQ(three.Size(15), 3);
  EXPECT_EQ(three.Size(2), 2);
}

TEST(DraftWindowTest, AdaptiveShrinksWhileDraftsMissAndGrowsWhenWholeWindowsAreKept) {
  DraftWindow window(*ParseDraftWindow("adaptive"));
  EXPECT_EQ(window.Size(15), 10);  // kScale * kStartMean + kMargin before any round.
  EXPECT_EQ(window.Size(6), 6);    // Never more than the drafter sent.
  EXPECT_EQ(window.Size(0), 0);
  int last = window.Size(15);
  for (int round = 0; round < 12; ++round) {
    window.Record(last, 0);
    const int next = window.Size(15);
    EXPECT_LE(next, last);
    last = next;
  }
  EXPECT_EQ(last, 3);  // A stream that keeps nothing still verifies a few drafts.
  window.Record(last, 1);
  window.Record(0, 0);  // A round without drafts teaches nothing.
  const int before = window.Size(15);
  window.Record(before, before);
  EXPECT_GT(window.Size(15), before);
  for (int round = 0; round < 20; ++round) window.Record(window.Size(15), window.Size(15));
  EXPECT_EQ(window.Size(15), 15);
}

TEST_F(EngineTest, DraftFalseRunsPlain) {
  auto engine = Start(1, true);
  auto with = RunAll(*engine, {MakeRequest(1, 0.0f, true)});
  auto without = RunAll(*engine, {MakeRequest(1, 0.0f, false)});
  EXPECT_EQ(with[0].completion_ids, without[0].completion_ids);
  EXPECT_EQ(without[0].drafted, 0);
  EXPECT_EQ(without[0].head_variant, "none");
  EXPECT_EQ(with[0].head_variant, "toy-head");
}

TEST_F(EngineTest, ConcurrentEqualsSoloAndRepeatEqualsFirst) {
  std::vector<EngineRequest> requests;
  for (int which = 0; which < 4; ++which) requests.push_back(MakeRequest(which, which % 2, true));
  auto solo_engine = Start(1, true);
  std::vector<StreamSummary> solo;
  for (const auto& r : requests) solo.push_back(RunAll(*solo_engine, {r})[0]);
  for (int parallel : {1, 2, 4}) {
    auto engine = Start(parallel, true);
    for (int repeat = 0; repeat < 2; ++repeat) {
      auto together = RunAll(*engine, requests);
      ASSERT_EQ(together.size(), solo.size());
      for (size_t i = 0; i < solo.size(); ++i) {
        EXPECT_EQ(together[i].completion_ids, solo[i].completion_ids)
            << "parallel " << parallel << " request " << i;
      }
    }
  }
}

TEST_F(EngineTest, DrafterKilledMidRequestKeepsTokensAndRestartIsPickedUp) {
  auto plain_engine = Start(1, false);
  const auto plain = RunAll(*plain_engine, {MakeRequest(2, 0.7f, true)})[0];

  auto engine = Start(1, true);
  auto sink = std::make_shared<CollectingSink>();
  sink->on_round = [this](uint32_t round) {
    if (round == 2) channel_.Kill();
  };
  ASSERT_TRUE(engine->Submit(MakeRequest(2, 0.7f, true), sink).ok());
  absl::StatusOr<StreamSummary> killed = sink->Wait();
  ASSERT_TRUE(killed.ok()) << killed.status();
  EXPECT_EQ(killed->completion_ids, plain.completion_ids);
  EXPECT_TRUE(killed->draft_degraded);
  EXPECT_GT(killed->drafted, 0);

  // While down, requests run plain; after the restart, drafts come back.
  auto down = RunAll(*engine, {MakeRequest(2, 0.7f, true)})[0];
  EXPECT_EQ(down.completion_ids, plain.completion_ids);
  EXPECT_EQ(down.drafted, 0);
  channel_.Restart();
  auto back = RunAll(*engine, {MakeRequest(2, 0.7f, true)})[0];
  EXPECT_EQ(back.completion_ids, plain.completion_ids);
  EXPECT_GT(back.drafted, 0);
  EXPECT_FALSE(back.draft_degraded);
}

TEST_F(EngineTest, StopFromSinkTruncatesAndFinishesWithStop) {
  auto engine = Start(1, true);
  auto sink = std::make_shared<CollectingSink>();
  sink->stop_after = 7;
  ASSERT_TRUE(engine->Submit(MakeRequest(3, 0.0f, true), sink).ok());
  absl::StatusOr<StreamSummary> s = sink->Wait();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->finish_reason, FinishReason::kStop);
  EXPECT_EQ(s->completion_ids.size(), 7u);
}

TEST_F(EngineTest, LimitsGiveClearErrors) {
  EngineOptions options;
  options.max_prompt_tokens = 8;
  options.max_tokens_limit = 16;
  options.max_waiting = 64;
  auto engine = LaneEngine::Start(options, &model_, &sampler_, nullptr, nullptr);
  ASSERT_TRUE(engine.ok());
  auto sink = std::make_shared<CollectingSink>();
  EngineRequest r = MakeRequest(0, 0, true);
  r.prompt_ids.clear();
  EXPECT_TRUE(absl::IsInvalidArgument((*engine)->Submit(r, sink)));
  r = MakeRequest(0, 0, true);
  r.prompt_ids.push_back(kVocab);
  EXPECT_TRUE(absl::IsInvalidArgument((*engine)->Submit(r, sink)));
  r = MakeRequest(9, 0, true);  // 14 prompt tokens
  absl::Status long_prompt = (*engine)->Submit(r, sink);
  EXPECT_TRUE(absl::IsResourceExhausted(long_prompt));
  EXPECT_NE(long_prompt.message().find("limit is 8"), std::string::npos) << long_prompt;
  r = MakeRequest(0, 0, true);
  r.max_tokens = 17;
  EXPECT_TRUE(absl::IsInvalidArgument((*engine)->Submit(r, sink)));
}

TEST_F(EngineTest, ContextLimitEndsWithContext) {
  ToyVerifier small(kVocab, 20, kEos);
  EngineOptions options;
  options.draft_timeout = absl::Seconds(5);
  auto engine = LaneEngine::Start(options, &small, &sampler_, &channel_, nullptr);
  ASSERT_TRUE(engine.ok());
  EngineRequest r = MakeRequest(0, 0, true);
  r.ignore_eos = true;
  auto out = RunAll(**engine, {r});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].finish_reason, FinishReason::kContext);
  EXPECT_EQ(out[0].prompt_tokens + static_cast<int>(out[0].completion_ids.size()), 21);
}

// Every round verifies every live stream in ONE VerifyBatch call: each call holds distinct
// streams, a stream sits in every call from its first round to its last (a round split in two
// would leave a gap), all verifies went through the calls, and four streams shared calls.
TEST_F(EngineTest, ARoundVerifiesEveryLiveStreamInOneCall) {
  ToyVerifier counted(kVocab, 512, kEos);
  EngineOptions options;
  options.parallel = 4;
  options.draft_timeout = absl::Seconds(5);
  auto engine = LaneEngine::Start(options, &counted, &sampler_, &channel_, nullptr);
  ASSERT_TRUE(engine.ok()) << engine.status();
  // The first stream's first token waits until all four are queued, so they are all live
  // together from the second round on, however the threads are scheduled.
  absl::Notification queued;
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (int which = 0; which < 4; ++which) {
    EngineRequest r = MakeRequest(which, 0.0f, which != 1);  // One stream undrafted.
    r.ignore_eos = true;
    sinks.push_back(std::make_shared<CollectingSink>());
    if (which == 0) {
      sinks[0]->on_round = [&queued](uint32_t round) {
        if (round == 0) queued.WaitForNotification();
      };
    }
    EXPECT_TRUE((*engine)->Submit(std::move(r), sinks.back()).ok());
  }
  queued.Notify();
  int64_t rounds = 0;
  for (auto& sink : sinks) {
    absl::StatusOr<StreamSummary> s = sink->Wait();
    ASSERT_TRUE(s.ok()) << s.status();
    rounds += s->rounds;
  }
  const std::vector<std::vector<int>> batches = counted.log().batches();
  std::map<int, std::vector<size_t>> calls_of;
  int64_t jobs = 0;
  size_t widest = 0;
  for (size_t call = 0; call < batches.size(); ++call) {
    const std::set<int> distinct(batches[call].begin(), batches[call].end());
    EXPECT_EQ(distinct.size(), batches[call].size()) << "call " << call;
    for (int id : batches[call]) calls_of[id].push_back(call);
    jobs += static_cast<int64_t>(batches[call].size());
    widest = std::max(widest, batches[call].size());
  }
  EXPECT_EQ(jobs, rounds);
  EXPECT_EQ(counted.log().verifies(), jobs);
  EXPECT_EQ(widest, 4u);
  EXPECT_EQ(calls_of.size(), 4u);
  for (const auto& [id, calls] : calls_of) {
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i], calls[0] + i) << "sequence " << id << " skipped a round's call";
    }
  }
}

double KvCacheUsage(const prometheus::Registry& registry) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name == "twinspan_kv_cache_usage_perc" && !family.metric.empty()) {
      return family.metric[0].gauge.value;
    }
  }
  return -1;
}

// The gauge is committed positions over the live streams' allocated positions, set each round:
// plain decoding commits one position a round, so round r (>= 2) sees the value round r - 1 left,
// (prompt + r - 1) / context; with no live stream it is 0.
TEST_F(EngineTest, KvCacheGaugeIsCommittedOverAllocatedPositionsEachRound) {
  constexpr int64_t kContext = 100;
  ToyVerifier small(kVocab, kContext, kEos);
  auto registry = std::make_shared<prometheus::Registry>();
  metrics::ServingMetrics metrics(registry, "toy");
  EngineOptions options;
  auto engine = LaneEngine::Start(options, &small, &sampler_, nullptr, &metrics);
  ASSERT_TRUE(engine.ok()) << engine.status();
  EngineRequest r = MakeRequest(0, 0.0f, false);  // 5 prompt tokens
  r.ignore_eos = true;
  r.max_tokens = 30;
  auto sink = std::make_shared<CollectingSink>();
  std::vector<std::pair<uint32_t, double>> seen;
  sink->on_round = [&](uint32_t round) { seen.push_back({round, KvCacheUsage(*registry)}); };
  ASSERT_TRUE((*engine)->Submit(r, sink).ok());
  ASSERT_TRUE(sink->Wait().ok());
  ASSERT_TRUE((*engine)->WaitIdle(absl::Seconds(10)));
  int checked = 0;
  for (const auto& [round, usage] : seen) {
    if (round < 2) continue;
    EXPECT_DOUBLE_EQ(usage, static_cast<double>(5 + round - 1) / kContext) << "round " << round;
    ++checked;
  }
  EXPECT_EQ(checked, 28);
  EXPECT_EQ(KvCacheUsage(*registry), 0.0);
}

// The engine's own deadline message: the request, the deadline as a UTC time and where it was.
std::string DeadlineText(absl::Time deadline) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", deadline, absl::UTCTimeZone());
}

double FallbackRounds(const prometheus::Registry& registry) {
  double total = 0;
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != "twinspan_spec_decode_fallback_rounds_total") continue;
    for (const prometheus::ClientMetric& m : family.metric) total += m.counter.value;
  }
  return total;
}

// A long prompt (25 chunks of 40 ms: a second) with a 100 ms deadline ends with
// DEADLINE_EXCEEDED about when the deadline passes, not after the whole prefill, and the stream
// is freed at once.
TEST_F(EngineTest, LongPrefillStopsAtTheDeadlineAndFreesTheStream) {
  ToyVerifier slow(kVocab, 512, kEos);
  slow.SetSlowPrefill({/*chunk_rows=*/4, absl::Milliseconds(40)});
  EngineOptions options;
  auto engine = LaneEngine::Start(options, &slow, &sampler_, nullptr, nullptr);
  ASSERT_TRUE(engine.ok()) << engine.status();
  EngineRequest r = MakeRequest(0, 0.0f, false);
  r.prompt_ids.assign(100, 3);
  const absl::Time start = absl::Now();
  r.deadline = start + absl::Milliseconds(100);
  auto sink = std::make_shared<CollectingSink>();
  ASSERT_TRUE((*engine)->Submit(r, sink).ok());
  absl::StatusOr<StreamSummary> s = sink->Wait();
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(absl::IsDeadlineExceeded(s.status())) << s.status();
  EXPECT_LT(took, absl::Milliseconds(500)) << "the prefill ran on past its deadline";
  EXPECT_NE(s.status().message().find(DeadlineText(r.deadline)), std::string::npos) << s.status();
  EXPECT_NE(s.status().message().find("during its prefill"), std::string::npos) << s.status();
  EXPECT_NE(s.status().message().find("req-0"), std::string::npos) << s.status();
  EXPECT_TRUE((*engine)->WaitIdle(absl::Milliseconds(200)));
  EXPECT_TRUE(sink->seen().empty());
}

// An Abort and a client that went away stop a long prefill too, as kAborted.
TEST_F(EngineTest, AbortAndCancelStopALongPrefill) {
  ToyVerifier slow(kVocab, 512, kEos);
  slow.SetSlowPrefill({/*chunk_rows=*/4, absl::Milliseconds(40)});
  EngineOptions options;
  auto engine = LaneEngine::Start(options, &slow, &sampler_, nullptr, nullptr);
  ASSERT_TRUE(engine.ok()) << engine.status();
  for (bool cancel : {false, true}) {
    EngineRequest r = MakeRequest(1, 0.0f, false);
    r.prompt_ids.assign(100, 5);
    auto sink = std::make_shared<CollectingSink>();
    ASSERT_TRUE((*engine)->Submit(r, sink).ok());
    absl::SleepFor(absl::Milliseconds(100));  // Inside the prefill.
    const absl::Time stop = absl::Now();
    if (cancel) {
      sink->cancelled = true;
    } else {
      EXPECT_TRUE((*engine)->Abort(r.request_id));
    }
    absl::StatusOr<StreamSummary> s = sink->Wait();
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->finish_reason, FinishReason::kAborted) << "cancel " << cancel;
    EXPECT_LT(absl::Now() - stop, absl::Milliseconds(300)) << "cancel " << cancel;
    EXPECT_TRUE(s->completion_ids.empty());
    EXPECT_TRUE((*engine)->WaitIdle(absl::Milliseconds(200)));
  }
}

// A drafter that never answers: the round's wait ends at the request's deadline (100 ms), not at
// the 5 s draft timeout, with DEADLINE_EXCEEDED naming the deadline, and is no drafter fallback.
class SilentChannel : public DraftChannel {
 public:
  explicit SilentChannel(DrafterInfo info) : info_(std::move(info)) {}
  bool ready() const override { return true; }
  DrafterInfo peer() const override { return info_; }
  uint64_t epoch() const override { return 1; }
  absl::Status Open(const DraftOpen&) override { return absl::OkStatus(); }
  absl::Status Commit(const DraftCommit&) override { return absl::OkStatus(); }
  void Close(uint64_t) override {}
  absl::StatusOr<DraftProposal> Await(uint64_t, uint32_t, absl::Time deadline) override {
    absl::SleepFor(deadline - absl::Now());
    return absl::DeadlineExceededError("silent drafter");
  }

 private:
  DrafterInfo info_;
};

TEST_F(EngineTest, ProposalWaitEndsAtTheRequestDeadlineWithoutAFallback) {
  SilentChannel silent(drafter_.info());
  auto registry = std::make_shared<prometheus::Registry>();
  metrics::ServingMetrics metrics(registry, "toy");
  EngineOptions options;
  options.draft_timeout = absl::Seconds(5);
  auto engine = LaneEngine::Start(options, &model_, &sampler_, &silent, &metrics);
  ASSERT_TRUE(engine.ok()) << engine.status();
  EngineRequest r = MakeRequest(2, 0.0f, true);
  r.ignore_eos = true;
  const absl::Time start = absl::Now();
  r.deadline = start + absl::Milliseconds(100);
  auto sink = std::make_shared<CollectingSink>();
  ASSERT_TRUE((*engine)->Submit(r, sink).ok());
  absl::StatusOr<StreamSummary> s = sink->Wait();
  ASSERT_TRUE(absl::IsDeadlineExceeded(s.status())) << s.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1)) << "waited out the draft timeout";
  EXPECT_NE(s.status().message().find(DeadlineText(r.deadline)), std::string::npos) << s.status();
  EXPECT_NE(s.status().message().find("while it waited for proposals"), std::string::npos)
      << s.status();
  EXPECT_EQ(sink->seen().size(), 1u);  // The prefill's token.
  EXPECT_EQ(FallbackRounds(*registry), 0.0);
  // A request without a deadline on the same silent drafter does count its late rounds.
  EngineRequest late = MakeRequest(2, 0.0f, true);
  late.max_tokens = 2;
  EngineOptions quick;
  quick.draft_timeout = absl::Milliseconds(20);
  auto engine2 = LaneEngine::Start(quick, &model_, &sampler_, &silent, &metrics);
  ASSERT_TRUE(engine2.ok());
  auto sink2 = std::make_shared<CollectingSink>();
  ASSERT_TRUE((*engine2)->Submit(late, sink2).ok());
  absl::StatusOr<StreamSummary> s2 = sink2->Wait();
  ASSERT_TRUE(s2.ok()) << s2.status();
  EXPECT_TRUE(s2->draft_degraded);
  EXPECT_GE(FallbackRounds(*registry), 1.0);
}

// Between rounds the engine names the deadline too.
TEST_F(EngineTest, DeadlineBetweenRoundsNamesTheDeadline) {
  auto engine = Start(1, false);
  EngineRequest r = MakeRequest(3, 0.0f, false);
  r.ignore_eos = true;
  r.max_tokens = 1000;
  r.deadline = absl::Now() + absl::Milliseconds(50);
  auto sink = std::make_shared<CollectingSink>();
  sink->on_round = [](uint32_t round) {
    if (round == 1) absl::SleepFor(absl::Milliseconds(80));
  };
  ASSERT_TRUE(engine->Submit(r, sink).ok());
  absl::StatusOr<StreamSummary> s = sink->Wait();
  ASSERT_TRUE(absl::IsDeadlineExceeded(s.status())) << s.status();
  EXPECT_NE(s.status().message().find(DeadlineText(r.deadline)), std::string::npos) << s.status();
  EXPECT_NE(s.status().message().find("req-3"), std::string::npos) << s.status();
  EXPECT_NE(s.status().message().find("2 tokens were streamed"), std::string::npos) << s.status();
}

TEST(ProposalBoxTest, StaleAndOutOfOrderAnswersAreNeverApplied) {
  ProposalBox box;
  box.Put(7, 3, DraftProposal{{1, 2}, {0, 0}});
  box.Put(7, 2, DraftProposal{{9, 9}, {}});  // older round after a newer one: dropped
  EXPECT_EQ(box.stale_dropped(), 1);
  auto ahead = box.Await(7, 2, absl::Now());
  EXPECT_FALSE(ahead.ok());
  auto got = box.Await(7, 3, absl::Now());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->ids, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(got->parents, (std::vector<uint32_t>{0, 0}));  // A tree travels whole.
  EXPECT_TRUE(
      absl::IsDeadlineExceeded(box.Await(7, 4, absl::Now() + absl::Milliseconds(5)).status()));
  box.Fail(absl::UnavailableError("gone"));
  EXPECT_TRUE(absl::IsUnavailable(box.Await(7, 4, absl::InfiniteFuture()).status()));
}

}  // namespace
}  // namespace twinspan::engine
