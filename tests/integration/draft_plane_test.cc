// The gRPC drafter plane on loopback: the engine with a GrpcDraftChannel to a DrafterService gives
// the tokens of plain decoding, survives the drafter going away, picks up a restarted one, and a
// drafter built for another checkpoint is refused with a clear error.
#include <functional>
#include <memory>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "services/drafter/server/drafter_service.h"
#include "services/rpc/server_runner.h"
#include "services/target/engine/lane_engine.h"
#include "services/target/server/grpc_draft_channel.h"
#include "tests/integration/toy_models.h"
#include "tests/testing/summary_sink.h"

namespace twinspan::rpc {
namespace {

using engine::EngineRequest;
using engine::StreamSummary;

constexpr int kVocab = 97;

using Sink = testing::SummarySink;

EngineRequest Request(int which, float temperature) {
  EngineRequest r;
  r.request_id = "plane-" + std::to_string(which);
  for (int i = 0; i < 6 + which; ++i) r.prompt_ids.push_back((which * 17 + i * 5) % 90);
  r.sampling.temperature = temperature;
  r.sampling.seed = 99 + which;
  r.max_tokens = 48;
  return r;
}

StreamSummary RunOne(engine::LaneEngine& e, EngineRequest r,
                     std::function<void(uint32_t)> hook = {}) {
  auto sink = std::make_shared<Sink>();
  sink->on_round = std::move(hook);
  EXPECT_TRUE(e.Submit(std::move(r), sink).ok());
  absl::StatusOr<StreamSummary> s = sink->Wait();
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : StreamSummary{};
}

class DraftPlaneTest : public ::testing::Test {
 protected:
  testing::ToyVerifier model_{kVocab, 512, 96};
  testing::ToyDrafter drafter_{kVocab, 5, 3, 8};  // tap width 8 = 2 layers x hidden 4
  testing::ToySampler sampler_;

  std::unique_ptr<RunningServer> StartDrafter(const engine::DraftModel* model, int port,
                                              std::unique_ptr<DrafterService>* service) {
    *service = std::make_unique<DrafterService>(model, DrafterServiceOptions{}, nullptr);
    ServerOptions options;
    options.listen = "127.0.0.1:" + std::to_string(port);
    auto server = RunningServer::Start(options, {service->get()});
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  GrpcDraftChannelOptions ChannelOptions(int port) {
    GrpcDraftChannelOptions o;
    o.address = "127.0.0.1:" + std::to_string(port);
    o.vocab_size = kVocab;
    o.tokenizer_sha256 = "toy-tokenizer";
    o.target_fingerprint = "toy-fingerprint";
    o.hidden_size = 4;
    o.reconnect_backoff = absl::Milliseconds(50);
    return o;
  }

  std::unique_ptr<engine::LaneEngine> Engine(engine::DraftChannel* channel) {
    engine::EngineOptions options;
    options.parallel = 4;
    options.draft_timeout = absl::Seconds(2);
    auto e = engine::LaneEngine::Start(options, &model_, &sampler_, channel, nullptr);
    EXPECT_TRUE(e.ok());
    return *std::move(e);
  }
};

TEST_F(DraftPlaneTest, SplitEqualsPlainAndSurvivesDrafterRestart) {
  std::unique_ptr<DrafterService> service;
  auto server = StartDrafter(&drafter_, 0, &service);
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  auto channel = GrpcDraftChannel::Start(ChannelOptions(port));
  ASSERT_TRUE(channel->WaitReady(absl::Seconds(10))) << channel->last_error();
  auto split = Engine(channel.get());
  auto plain = Engine(nullptr);

  for (float t : {0.0f, 0.9f}) {
    for (int which = 0; which < 3; ++which) {
      StreamSummary a = RunOne(*plain, Request(which, t));
      StreamSummary b = RunOne(*split, Request(which, t));
      EXPECT_EQ(a.completion_ids, b.completion_ids) << "t=" << t << " request " << which;
      EXPECT_GT(b.drafted, 0);
      EXPECT_FALSE(b.draft_degraded);
      if (t == 0.0f) EXPECT_GT(b.accepted, 0);
    }
  }

  // Kill the drafter in the middle of a request: same tokens, marked degraded.
  const StreamSummary want = RunOne(*plain, Request(1, 0.0f));
  StreamSummary killed = RunOne(*split, Request(1, 0.0f), [&](uint32_t round) {
    if (round == 2) server.reset();
  });
  EXPECT_EQ(killed.completion_ids, want.completion_ids);
  EXPECT_TRUE(killed.draft_degraded);

  // A request that starts once the drafter is known to be gone ran without it as well.
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (channel->ready() && absl::Now() < until) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_FALSE(channel->ready());
  StreamSummary down = RunOne(*split, Request(1, 0.0f));
  EXPECT_EQ(down.completion_ids, want.completion_ids);
  EXPECT_TRUE(down.draft_degraded);

  // A drafter on the same port is picked up again.
  server = StartDrafter(&drafter_, port, &service);
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(channel->WaitReady(absl::Seconds(10))) << channel->last_error();
  StreamSummary back = RunOne(*split, Request(1, 0.0f));
  EXPECT_EQ(back.completion_ids, want.completion_ids);
  EXPECT_GT(back.accepted, 0);
  EXPECT_FALSE(back.draft_degraded);
}

// SIGTERM's path: StopAll ends the stream a target keeps open while idle, so the server stops at
// once instead of after its whole grace period, and the target goes on without drafts.
TEST_F(DraftPlaneTest, StoppedDrafterShutsDownAtOnce) {
  std::unique_ptr<DrafterService> service;
  auto server = StartDrafter(&drafter_, 0, &service);
  ASSERT_NE(server, nullptr);
  auto channel = GrpcDraftChannel::Start(ChannelOptions(server->port()));
  ASSERT_TRUE(channel->WaitReady(absl::Seconds(10))) << channel->last_error();
  auto split = Engine(channel.get());
  auto plain = Engine(nullptr);
  EXPECT_GT(RunOne(*split, Request(0, 0.0f)).drafted, 0);

  const absl::Time start = absl::Now();
  service->StopAll();
  server->Shutdown(start + absl::Seconds(5));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  const StreamSummary after = RunOne(*split, Request(1, 0.0f));
  EXPECT_EQ(after.completion_ids, RunOne(*plain, Request(1, 0.0f)).completion_ids);
  EXPECT_TRUE(after.draft_degraded);
}

TEST_F(DraftPlaneTest, DrafterForAnotherCheckpointIsRefused) {
  std::unique_ptr<DrafterService> service;
  auto server = StartDrafter(&drafter_, 0, &service);
  ASSERT_NE(server, nullptr);
  GrpcDraftChannelOptions options = ChannelOptions(server->port());
  options.target_fingerprint = "another-checkpoint";
  auto channel = GrpcDraftChannel::Start(options);
  EXPECT_FALSE(channel->WaitReady(absl::Seconds(2)));
  const std::string error = channel->last_error();
  EXPECT_NE(error.find("FAILED_PRECONDITION"), std::string::npos) << error;
  EXPECT_NE(error.find("fingerprint"), std::string::npos) << error;
  // Requests still complete, without drafts.
  auto e = Engine(channel.get());
  StreamSummary s = RunOne(*e, Request(0, 0.0f));
  EXPECT_EQ(s.drafted, 0);
  EXPECT_FALSE(s.completion_ids.empty());
}

TEST_F(DraftPlaneTest, FusedAndBf16TapsEqualPlainAndSendFewerBytes) {
  std::unique_ptr<DrafterService> service;
  auto server = StartDrafter(&drafter_, 0, &service);
  ASSERT_NE(server, nullptr);
  auto plain = Engine(nullptr);
  // Raw f32, fused f32, raw bf16, fused bf16: all give plain decoding's tokens.
  testing::ToyTapFusion fusion(/*raw_width=*/8, /*fused_width=*/4);
  int64_t bytes[2][2] = {};
  for (int fused = 0; fused < 2; ++fused) {
    for (int bf16 = 0; bf16 < 2; ++bf16) {
      GrpcDraftChannelOptions options = ChannelOptions(server->port());
      if (fused) options.fusion = &fusion;
      options.bf16_taps = bf16 == 1;
      auto channel = GrpcDraftChannel::Start(options);
      ASSERT_TRUE(channel->WaitReady(absl::Seconds(10))) << channel->last_error();
      auto split = Engine(channel.get());
      for (float t : {0.0f, 0.9f}) {
        StreamSummary a = RunOne(*plain, Request(2, t));
        StreamSummary b = RunOne(*split, Request(2, t));
        EXPECT_EQ(a.completion_ids, b.completion_ids) << "fused " << fused << " bf16 " << bf16;
        EXPECT_GT(b.drafted, 0);
        EXPECT_FALSE(b.draft_degraded) << "fused " << fused << " bf16 " << bf16;
        if (t == 0.0f) EXPECT_GT(b.accepted, 0);
      }
      split.reset();
      bytes[fused][bf16] = channel->bytes_sent();
    }
  }
  // Same requests, same rounds: fused rows are half as wide here, bf16 half as many bytes.
  EXPECT_LT(bytes[1][0], bytes[0][0]);
  EXPECT_LT(bytes[0][1], bytes[0][0]);
  EXPECT_LT(bytes[1][1], bytes[1][0]);
}

TEST_F(DraftPlaneTest, FusedTapsFromAnotherDrafterCheckpointAreRefused) {
  std::unique_ptr<DrafterService> service;
  auto server = StartDrafter(&drafter_, 0, &service);
  ASSERT_NE(server, nullptr);
  testing::ToyTapFusion other(8, 4, "another-drafter");
  GrpcDraftChannelOptions options = ChannelOptions(server->port());
  options.fusion = &other;
  auto channel = GrpcDraftChannel::Start(options);
  EXPECT_FALSE(channel->WaitReady(absl::Seconds(2)));
  const std::string error = channel->last_error();
  EXPECT_NE(error.find("FAILED_PRECONDITION"), std::string::npos) << error;
  EXPECT_NE(error.find("another-drafter"), std::string::npos) << error;
  EXPECT_NE(error.find("toy-drafter"), std::string::npos) << error;
  auto e = Engine(channel.get());
  StreamSummary s = RunOne(*e, Request(0, 0.0f));
  EXPECT_EQ(s.drafted, 0);
}

// A drafter that takes no fused rows (as one built before fused taps would) refuses the Hello.
TEST_F(DraftPlaneTest, DrafterWithoutFusedFormRefusesFusedHello) {
  class RawOnly : public engine::DraftModel {
   public:
    explicit RawOnly(const engine::DraftModel* inner) : inner_(inner), info_(inner->info()) {
      info_.fused_width = 0;
      info_.drafter_fingerprint.clear();
    }
    const engine::DrafterInfo& info() const override { return info_; }
    absl::StatusOr<std::unique_ptr<engine::DraftSession>> NewSession() const override {
      return inner_->NewSession();
    }

   private:
    const engine::DraftModel* inner_;
    engine::DrafterInfo info_;
  } raw_only(&drafter_);
  std::unique_ptr<DrafterService> service;
  auto server = StartDrafter(&raw_only, 0, &service);
  ASSERT_NE(server, nullptr);
  testing::ToyTapFusion fusion(8, 4);
  GrpcDraftChannelOptions options = ChannelOptions(server->port());
  options.fusion = &fusion;
  auto channel = GrpcDraftChannel::Start(options);
  EXPECT_FALSE(channel->WaitReady(absl::Seconds(2)));
  const std::string error = channel->last_error();
  EXPECT_NE(error.find("does not take fused taps"), std::string::npos) << error;
}

// Trees over gRPC: a target that verifies trees (Hello.max_tree_nodes) gets them whole and
// accepts past a wrong draft; one that verifies chains only (max_tree_nodes 0, every target older
// than trees) gets their main chains. The tokens are plain decoding's either way.
TEST_F(DraftPlaneTest, TreesTravelWholeToATargetThatVerifiesThemAndAsChainsOtherwise) {
  testing::ToyDrafter tree_drafter{kVocab, 5, 3, 8, 0, /*tree_nodes=*/8};
  std::unique_ptr<DrafterService> service;
  auto server = StartDrafter(&tree_drafter, 0, &service);
  ASSERT_NE(server, nullptr);
  auto plain = Engine(nullptr);
  int64_t accepted[2] = {0, 0};
  for (int trees : {0, 1}) {
    GrpcDraftChannelOptions o = ChannelOptions(server->port());
    o.max_tree_nodes = trees == 1 ? 64 : 0;
    auto channel = GrpcDraftChannel::Start(o);
    ASSERT_TRUE(channel->WaitReady(absl::Seconds(10))) << channel->last_error();
    EXPECT_EQ(channel->peer().tree_nodes, trees == 1 ? 8 : 0);  // The drafter's answer.
    auto split = Engine(channel.get());
    for (float t : {0.0f, 0.9f}) {
      for (int which = 0; which < 3; ++which) {
        const StreamSummary a = RunOne(*plain, Request(which, t));
        const StreamSummary b = RunOne(*split, Request(which, t));
        EXPECT_EQ(a.completion_ids, b.completion_ids) << "trees " << trees << " t=" << t;
        if (t == 0.0f) accepted[trees] += b.accepted;
      }
    }
  }
  EXPECT_GT(accepted[1], accepted[0]);  // The whole trees accept past the wrong drafts.
}

}  // namespace
}  // namespace twinspan::rpc
