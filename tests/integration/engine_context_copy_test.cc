// Context-copy drafts on the lane engine: the n-gram index proposes what followed the context's
// last n tokens, the picker verifies the source with the longer expected accept, and with copies
// (alone or beside a drafter, greedy and sampled) every completion is plain decoding's while
// repetitive text is emitted many tokens a round; the metrics count accepted tokens by source.
#include <memory>
#include <string>
#include <vector>

#include "common/metrics/serving_metrics.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/target/engine/context_copy.h"
#include "services/target/engine/draft_picker.h"
#include "services/target/engine/in_process_draft_channel.h"
#include "services/target/engine/lane_engine.h"
#include "tests/integration/toy_models.h"
#include "tests/testing/summary_sink.h"

namespace twinspan::engine {
namespace {

constexpr int kVocab = 97;
constexpr uint32_t kEos = 96;
constexpr uint32_t kPeriod = 20;

TEST(ContextCopyIndexTest, ProposesWhatFollowedTheLatestEarlierOccurrence) {
  ContextCopyIndex index(3);
  index.Append(std::vector<uint32_t>{1, 2, 3, 4, 5, 9, 1, 2, 3, 7, 8});
  EXPECT_TRUE(index.Propose(4).empty());  // 3 7 8 never occurred before
  index.Append(std::vector<uint32_t>{1, 2, 3});
  // 1 2 3 occurred twice before: the latest was followed by 7 8 1 2 3.
  EXPECT_EQ(index.Propose(4), (std::vector<uint32_t>{7, 8, 1, 2}));
  EXPECT_EQ(index.Propose(100), (std::vector<uint32_t>{7, 8, 1, 2, 3}));  // up to the end
  EXPECT_TRUE(index.Propose(0).empty());
  ContextCopyIndex short_context(8);
  short_context.Append(std::vector<uint32_t>{1, 2, 3, 1, 2, 3});
  EXPECT_TRUE(short_context.Propose(4).empty());
}

TEST(DraftPickerTest, VerifiesTheSourceWithTheLongerExpectedAccept) {
  DraftPicker picker;
  EXPECT_EQ(picker.Pick(15, 0), DraftSource::kDrafter);       // no copy
  EXPECT_EQ(picker.Pick(0, 3), DraftSource::kContextCopy);    // no drafter proposal
  EXPECT_EQ(picker.Pick(15, 15), DraftSource::kContextCopy);  // the copy's prior is higher
  // Copies that keep missing at their first token lose to the drafter; a drafter that keeps
  // missing loses to copies that match.
  const std::vector<uint32_t> emitted = {1, 2, 3, 4, 5, 6};
  for (int round = 0; round < 8; ++round) {
    picker.Learn(DraftSource::kContextCopy, std::vector<uint32_t>{9, 9, 9}, emitted);
    picker.Learn(DraftSource::kDrafter, std::vector<uint32_t>{1, 2, 3, 4, 5}, emitted);
  }
  EXPECT_EQ(picker.Pick(15, 15), DraftSource::kDrafter);
  EXPECT_LT(picker.ExpectedAccepted(DraftSource::kContextCopy, 15), 0.5);
  for (int round = 0; round < 30; ++round) {
    picker.Learn(DraftSource::kContextCopy, std::vector<uint32_t>{1, 2, 3, 4, 5}, emitted);
    picker.Learn(DraftSource::kDrafter, std::vector<uint32_t>{7}, emitted);
  }
  EXPECT_EQ(picker.Pick(15, 5), DraftSource::kContextCopy);
  // A proposal longer than what the target emitted shows no mismatch past it.
  DraftPicker censored;
  for (int round = 0; round < 30; ++round) {
    censored.Learn(DraftSource::kContextCopy, std::vector<uint32_t>{1, 2, 9, 9}, {1, 2});
  }
  EXPECT_GT(censored.ExpectedAccepted(DraftSource::kContextCopy, 1), 0.95);
}

class EngineContextCopyTest : public ::testing::Test {
 protected:
  void SetUp() override { model_.SetCycle(kPeriod); }

  std::unique_ptr<LaneEngine> Start(DraftChannel* channel, int ngram = 8) {
    EngineOptions options;
    options.parallel = 4;
    options.draft_timeout = absl::Seconds(5);
    options.context_copy_ngram = ngram;
    auto engine = LaneEngine::Start(options, &model_, &sampler_, channel, &metrics_);
    EXPECT_TRUE(engine.ok()) << engine.status();
    return engine.ok() ? *std::move(engine) : nullptr;
  }

  // A prompt of two turns of the cycle from `first`, then `extra` ids of a third.
  static EngineRequest Request(int which, float temperature, bool draft, bool context_copy) {
    EngineRequest r;
    r.request_id = "copy-" + std::to_string(which);
    for (uint32_t i = 0; i < 2 * kPeriod + 3; ++i) r.prompt_ids.push_back((which + i) % kPeriod);
    r.sampling.temperature = temperature;
    r.sampling.seed = 77 + which;
    r.max_tokens = 80;
    r.draft = draft;
    r.context_copy = context_copy;
    return r;
  }

  std::vector<StreamSummary> RunAll(LaneEngine& engine, const std::vector<EngineRequest>& rs) {
    std::vector<std::shared_ptr<twinspan::testing::SummarySink>> sinks;
    for (const EngineRequest& r : rs) {
      sinks.push_back(std::make_shared<twinspan::testing::SummarySink>());
      EXPECT_TRUE(engine.Submit(r, sinks.back()).ok());
    }
    std::vector<StreamSummary> out;
    for (auto& sink : sinks) {
      absl::StatusOr<StreamSummary> s = sink->Wait();
      EXPECT_TRUE(s.ok()) << s.status();
      out.push_back(s.ok() ? *s : StreamSummary{});
    }
    return out;
  }

  double Counter(const std::string& name, const std::string& source) {
    double total = 0;
    for (const auto& family : registry_->Collect()) {
      if (family.name != name) continue;
      for (const auto& metric : family.metric) {
        for (const auto& label : metric.label) {
          if (label.name == "source" && label.value == source) total += metric.counter.value;
        }
      }
    }
    return total;
  }

  testing::ToyVerifier model_{kVocab, 512, kEos};
  testing::ToyDrafter drafter_{kVocab, /*block_size=*/6, /*miss_every=*/3, /*tap_width=*/8};
  testing::ToySampler sampler_;
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  metrics::ServingMetrics metrics_{registry_, "toy"};
};

TEST_F(EngineContextCopyTest, CopiesChangeNoTokenAloneOrBesideADrafterGreedyAndSampled) {
  int64_t copied = 0, drafted = 0;  // accepted tokens by source, over every run
  for (float temperature : {0.0f, 0.8f}) {
    SCOPED_TRACE(::testing::Message() << "temperature " << temperature);
    std::vector<EngineRequest> plain_requests, copy_requests;
    for (int which = 0; which < 4; ++which) {
      plain_requests.push_back(Request(which, temperature, /*draft=*/false, true));
      copy_requests.push_back(Request(which, temperature, /*draft=*/true, true));
    }
    auto plain_engine = Start(nullptr);
    const auto plain = RunAll(*plain_engine, plain_requests);
    auto alone_engine = Start(nullptr);
    const auto alone = RunAll(*alone_engine, copy_requests);
    InProcessDraftChannel channel(&drafter_);
    auto beside_engine = Start(&channel);
    const auto beside = RunAll(*beside_engine, copy_requests);
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ(plain[i].drafted, 0);
      EXPECT_EQ(alone[i].completion_ids, plain[i].completion_ids) << "alone, request " << i;
      EXPECT_EQ(beside[i].completion_ids, plain[i].completion_ids) << "beside, request " << i;
      // Without a drafter every draft is a copy; the cycle's breaks reject some.
      EXPECT_EQ(alone[i].context_copy_drafted, alone[i].drafted);
      EXPECT_GT(alone[i].context_copy_accepted, 0);
      EXPECT_LT(alone[i].context_copy_accepted, alone[i].context_copy_drafted);
      EXPECT_EQ(alone[i].head_variant, "none");
      // Copies win most rounds beside a drafter that misses every third proposal.
      EXPECT_GT(beside[i].context_copy_accepted, beside[i].accepted / 2) << i;
      EXPECT_GT(static_cast<double>(alone[i].completion_ids.size()) / (alone[i].rounds + 1), 3.0);
      for (const StreamSummary* s : {&alone[i], &beside[i]}) {
        copied += s->context_copy_accepted;
        drafted += s->accepted - s->context_copy_accepted;
      }
    }
  }
  EXPECT_EQ(Counter("twinspan_spec_decode_num_accepted_tokens_total", "context_copy"), copied);
  EXPECT_EQ(Counter("twinspan_spec_decode_num_accepted_tokens_total", "drafter"), drafted);
}

TEST_F(EngineContextCopyTest, OffByRequestOrByTheEngine) {
  auto engine = Start(nullptr);
  const auto off = RunAll(*engine, {Request(1, 0.0f, true, /*context_copy=*/false)});
  EXPECT_EQ(off[0].drafted, 0);
  auto no_copies = Start(nullptr, /*ngram=*/0);
  const auto none = RunAll(*no_copies, {Request(1, 0.0f, true, true)});
  EXPECT_EQ(none[0].drafted, 0);
  EXPECT_EQ(none[0].completion_ids, off[0].completion_ids);
  EngineOptions bad;
  bad.context_copy_ngram = 65;
  EXPECT_TRUE(absl::IsInvalidArgument(
      LaneEngine::Start(bad, &model_, &sampler_, nullptr, nullptr).status()));
  bad.context_copy_ngram = 8;
  bad.context_copy_max_tokens = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(
      LaneEngine::Start(bad, &model_, &sampler_, nullptr, nullptr).status()));
}

}  // namespace
}  // namespace twinspan::engine
