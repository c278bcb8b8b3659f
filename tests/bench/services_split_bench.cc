// Per-round cost of the gRPC split against the in-process drafter: the lane engine runs one
// stream over toy models (no model compute), so a round's time is the engine plus the drafter
// plane. Arguments: tap floats per row (8: tiny; 512: the demo pair's 2 x 256; 25,600: the 27B's
// raw 5 x 5,120) and the transport (0: in-process, 1: gRPC over loopback in this process).
#include <memory>

#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "services/engine/grpc/drafter_service.h"
#include "services/engine/grpc/grpc_draft_channel.h"
#include "services/engine/grpc/server_runner.h"
#include "services/engine/in_process_draft_channel.h"
#include "services/engine/lane_engine.h"
#include "spdlog/spdlog.h"
#include "tests/integration/toy_models.h"

namespace twinspan {
namespace {

class DoneSink : public engine::StreamSink {
 public:
  engine::SinkVerdict OnTokens(absl::Span<const uint32_t> ids, uint32_t) override {
    return {static_cast<int>(ids.size()), false};
  }
  void OnFinish(absl::StatusOr<engine::StreamSummary> s) override {
    absl::MutexLock lock(&mu_);
    summary_ = std::move(s);
    done_ = true;
  }
  bool Cancelled() const override { return false; }
  absl::StatusOr<engine::StreamSummary> Wait() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
    return summary_;
  }

 private:
  absl::Mutex mu_;
  bool done_ = false;
  absl::StatusOr<engine::StreamSummary> summary_ = absl::UnknownError("unfinished");
};

void BM_Round(benchmark::State& state) {
  spdlog::set_level(spdlog::level::warn);
  const int tap_floats = static_cast<int>(state.range(0));
  const bool use_grpc = state.range(1) == 1;
  constexpr int kVocab = 97;
  testing::ToyVerifier model(kVocab, 1 << 16, 96, /*hidden_size=*/tap_floats / 2);
  testing::ToyDrafter drafter(kVocab, /*block_size=*/8, /*miss_every=*/3, tap_floats);
  testing::ToySampler sampler;
  std::unique_ptr<rpc::DrafterService> service;
  std::unique_ptr<rpc::RunningServer> server;
  std::unique_ptr<engine::DraftChannel> channel;
  if (use_grpc) {
    service =
        std::make_unique<rpc::DrafterService>(&drafter, rpc::DrafterServiceOptions{}, nullptr);
    server = *rpc::RunningServer::Start(rpc::ServerOptions{}, {service.get()});
    rpc::GrpcDraftChannelOptions o;
    o.address = "127.0.0.1:" + std::to_string(server->port());
    o.vocab_size = kVocab;
    o.tokenizer_sha256 = "toy-tokenizer";
    o.target_fingerprint = "toy-fingerprint";
    o.hidden_size = tap_floats / 2;
    auto grpc_channel = rpc::GrpcDraftChannel::Start(o);
    if (!grpc_channel->WaitReady(absl::Seconds(10))) state.SkipWithError("drafter not ready");
    channel = std::move(grpc_channel);
  } else {
    channel = std::make_unique<engine::InProcessDraftChannel>(&drafter);
  }
  engine::EngineOptions options;
  options.parallel = 1;
  options.max_tokens_limit = 1 << 16;
  options.draft_timeout = absl::Seconds(5);
  auto engine = *engine::LaneEngine::Start(options, &model, &sampler, channel.get(), nullptr);
  int64_t rounds = 0, tokens = 0, which = 0;
  for (auto _ : state) {
    engine::EngineRequest r;
    r.request_id = "bench";
    for (int i = 0; i < 16; ++i) r.prompt_ids.push_back((which * 13 + i * 7) % 90);
    ++which;
    r.max_tokens = 256;
    r.ignore_eos = true;
    auto sink = std::make_shared<DoneSink>();
    if (!engine->Submit(r, sink).ok()) state.SkipWithError("submit failed");
    absl::StatusOr<engine::StreamSummary> s = sink->Wait();
    if (!s.ok() || s->draft_degraded) state.SkipWithError("request failed or degraded");
    rounds += s->rounds;
    tokens += static_cast<int64_t>(s->completion_ids.size());
  }
  // Seconds per round = 1 / round_rate (real time, the engine thread and the drafter together).
  state.counters["rounds"] = static_cast<double>(rounds);
  state.counters["tokens_per_round"] = rounds ? static_cast<double>(tokens) / rounds : 0;
  state.counters["round_rate"] =
      benchmark::Counter(static_cast<double>(rounds), benchmark::Counter::kIsRate);
  engine.reset();
}
BENCHMARK(BM_Round)
    ->ArgsProduct({{8, 512, 25600}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

}  // namespace
}  // namespace twinspan

BENCHMARK_MAIN();
