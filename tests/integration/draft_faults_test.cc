// A drafter that misbehaves in every way the link allows, in one process: a FaultyDraftChannel
// wraps the in-process channel and corrupts what the engine gets (ids outside the vocabulary, a
// proposal longer than the block, another stream's or an old round's proposal, a stall past the
// draft deadline, an error) or what the drafter gets (truncated tap rows). Whatever it does, every
// request finishes and its tokens are the ones of draft: false.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "services/target/engine/in_process_draft_channel.h"
#include "services/target/engine/lane_engine.h"
#include "services/target/server/grpc_draft_channel.h"
#include "tests/integration/toy_models.h"
#include "tests/testing/summary_sink.h"

namespace twinspan::engine {
namespace {

using testing::ToyDrafter;
using testing::ToySampler;
using testing::ToyVerifier;

constexpr int kVocab = 97;
constexpr int kBlock = 6;

enum class Fault {
  kNone,
  kIdOutsideVocab,   // one proposed id is >= the vocabulary
  kLongerThanBlock,  // more than block - 1 ids
  kOtherStream,      // valid ids, but another stream's (wrong for this one)
  kStaleRound,       // the previous round's proposal again
  kStall,            // nothing until the draft deadline has passed
  kError,            // the drafter reports an error for the stream
  kTruncatedTaps,    // the drafter gets one tap row less than the ids it is told about
};

// Wraps a real channel and applies one fault to every `every`-th Await (or commit).
class FaultyDraftChannel : public DraftChannel {
 public:
  FaultyDraftChannel(DraftChannel* inner, Fault fault, int every)
      : inner_(inner), fault_(fault), every_(every) {}

  bool ready() const override { return inner_->ready(); }
  DrafterInfo peer() const override { return inner_->peer(); }
  uint64_t epoch() const override { return inner_->epoch(); }
  absl::Status Open(const DraftOpen& open) override { return inner_->Open(open); }
  absl::Status Commit(const DraftCommit& commit) override {
    if (fault_ != Fault::kTruncatedTaps || commit.taps.rows == 0 || !Due()) {
      return inner_->Commit(commit);
    }
    DraftCommit cut = commit;
    cut.taps.rows = commit.taps.rows - 1;
    cut.taps.data = commit.taps.data.subspan(0, cut.taps.rows * cut.taps.width);
    return inner_->Commit(cut);
  }
  void Close(uint64_t stream_id) override { inner_->Close(stream_id); }

  absl::StatusOr<DraftProposal> Await(uint64_t stream_id, uint32_t round,
                                      absl::Time deadline) override {
    absl::StatusOr<DraftProposal> got = inner_->Await(stream_id, round, deadline);
    if (!got.ok() || fault_ == Fault::kTruncatedTaps) return got;
    DraftProposal proposal = *std::move(got);
    std::vector<uint32_t>& ids = proposal.ids;
    std::vector<uint32_t> previous;
    {
      absl::MutexLock lock(&mu_);
      previous = last_[stream_id];
      last_[stream_id] = ids;
    }
    if (!Due()) return proposal;
    switch (fault_) {
      case Fault::kIdOutsideVocab:
        ids.back() = kVocab + 3;
        return proposal;
      case Fault::kLongerThanBlock:
        ids.insert(ids.end(), ids.begin(), ids.end());
        return proposal;
      case Fault::kOtherStream:
        for (uint32_t& id : ids) id = (id * 7 + 11) % kVocab;
        return proposal;
      case Fault::kStaleRound:
        return previous.empty() ? proposal : DraftProposal{previous, {}};
      case Fault::kStall:
        absl::SleepFor(deadline - absl::Now() + absl::Milliseconds(5));
        return absl::DeadlineExceededError("faulty drafter: stalled past the deadline");
      case Fault::kError:
        return absl::InvalidArgumentError("faulty drafter: this stream's context is broken");
      default:
        return proposal;
    }
  }

 private:
  bool Due() {
    absl::MutexLock lock(&mu_);
    return ++calls_ % every_ == 0;
  }

  DraftChannel* inner_;
  const Fault fault_;
  const int every_;
  absl::Mutex mu_;
  int64_t calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::vector<uint32_t>> last_ ABSL_GUARDED_BY(mu_);
};

EngineRequest MakeRequest(int which, bool draft) {
  EngineRequest r;
  r.request_id = "fault-" + std::to_string(which);
  for (int i = 0; i < 4 + which; ++i) r.prompt_ids.push_back((which * 13 + i * 5) % 90);
  r.sampling.temperature = which % 2 == 0 ? 0.0f : 0.9f;
  r.sampling.seed = 77 + which;
  r.max_tokens = 32;
  r.draft = draft;
  return r;
}

class DraftFaultsTest : public ::testing::TestWithParam<Fault> {
 protected:
  // Every request's summary, all submitted at once to an engine of 3 live streams.
  std::vector<StreamSummary> Run(DraftChannel* channel, bool draft) {
    EngineOptions options;
    options.parallel = 3;
    options.draft_timeout = absl::Milliseconds(50);
    auto engine = LaneEngine::Start(options, &model_, &sampler_, channel, nullptr);
    EXPECT_TRUE(engine.ok()) << engine.status();
    std::vector<std::shared_ptr<testing::SummarySink>> sinks;
    for (int i = 0; i < 6; ++i) {
      sinks.push_back(std::make_shared<testing::SummarySink>());
      EXPECT_TRUE((*engine)->Submit(MakeRequest(i, draft), sinks.back()).ok());
    }
    std::vector<StreamSummary> out;
    for (auto& sink : sinks) {
      absl::StatusOr<StreamSummary> s = sink->Wait();
      EXPECT_TRUE(s.ok()) << "a request was lost to the fault: " << s.status();
      out.push_back(s.ok() ? *s : StreamSummary());
    }
    return out;
  }

  ToyVerifier model_{kVocab, 512, /*eos_id=*/96};
  ToyDrafter drafter_{kVocab, kBlock, /*miss_every=*/4, /*tap_width=*/8};
  ToySampler sampler_;
};

TEST_P(DraftFaultsTest, TokensEqualPlainAndNoRequestIsLost) {
  const std::vector<StreamSummary> plain = Run(nullptr, false);
  InProcessDraftChannel inner(&drafter_);
  FaultyDraftChannel faulty(&inner, GetParam(), /*every=*/3);
  const std::vector<StreamSummary> drafted = Run(&faulty, true);
  ASSERT_EQ(drafted.size(), plain.size());
  bool any_degraded = false;
  int64_t total_drafted = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(drafted[i].completion_ids, plain[i].completion_ids) << "request " << i;
    total_drafted += drafted[i].drafted;
    // No verified window ever held more than one block (pending + block - 1 drafts).
    for (uint32_t tokens : drafted[i].tokens_per_round) EXPECT_LE(tokens, kBlock) << i;
    any_degraded = any_degraded || drafted[i].draft_degraded;
  }
  EXPECT_GT(total_drafted, 0) << "no drafts reached the engine: the fault was never exercised";
  const Fault f = GetParam();
  const bool detectable = f == Fault::kIdOutsideVocab || f == Fault::kLongerThanBlock ||
                          f == Fault::kStall || f == Fault::kError || f == Fault::kTruncatedTaps;
  EXPECT_EQ(any_degraded, detectable) << "draft_degraded must report exactly the faults the "
                                         "target can see";
}

std::string FaultName(const ::testing::TestParamInfo<Fault>& info) {
  static constexpr const char* kNames[] = {"None",        "IdOutsideVocab", "LongerThanBlock",
                                           "OtherStream", "StaleRound",     "Stall",
                                           "Error",       "TruncatedTaps"};
  return kNames[static_cast<int>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(EveryFault, DraftFaultsTest,
                         ::testing::Values(Fault::kNone, Fault::kIdOutsideVocab,
                                           Fault::kLongerThanBlock, Fault::kOtherStream,
                                           Fault::kStaleRound, Fault::kStall, Fault::kError,
                                           Fault::kTruncatedTaps),
                         FaultName);

// The handshake is the first line of defence: a drafter that asks for taps of layers the target
// lacks, or a block the engine would never verify, is refused before any stream uses it.
TEST(HelloAckTest, LayersOutsideTheTargetAndOversizedBlocksAreRefused) {
  rpc::GrpcDraftChannelOptions want;
  want.address = "drafter:1";
  want.vocab_size = kVocab;
  want.tokenizer_sha256 = "toy-tokenizer";
  want.target_fingerprint = "toy-fingerprint";
  want.hidden_size = 4;
  want.num_layers = 2;
  v1::HelloAck ack;
  ack.set_protocol(v1::DRAFT_PROTOCOL_V1);
  ack.set_vocab_size(kVocab);
  ack.set_tokenizer_sha256("toy-tokenizer");
  ack.set_target_fingerprint("toy-fingerprint");
  ack.set_block_size(kBlock);
  ack.add_target_layer_ids(0);
  ack.add_target_layer_ids(1);
  absl::StatusOr<DrafterInfo> ok = rpc::AcceptHelloAck(ack, want);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->tap_width, 8);
  v1::HelloAck deep = ack;
  deep.set_target_layer_ids(1, 7);
  const absl::Status layers = rpc::AcceptHelloAck(deep, want).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(layers)) << layers;
  EXPECT_NE(layers.message().find("tap layer 7 asked for; the target has 2 layers"),
            std::string::npos)
      << layers;
  v1::HelloAck huge = ack;
  huge.set_block_size(1000);
  EXPECT_TRUE(absl::IsFailedPrecondition(rpc::AcceptHelloAck(huge, want).status()));
  v1::HelloAck none = ack;
  none.clear_target_layer_ids();
  EXPECT_TRUE(absl::IsFailedPrecondition(rpc::AcceptHelloAck(none, want).status()));
}

}  // namespace
}  // namespace twinspan::engine
