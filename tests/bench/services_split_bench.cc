// Per-round cost of the gRPC split against the in-process drafter: the lane engine runs one
// stream over toy models (no model compute), so a round's time is the engine plus the drafter
// plane. Arguments: raw tap floats per row (8: tiny; 512: the demo pair's 2 x 256; 25,600: the
// 27B's raw 5 x 5,120) and the transport: 0 in-process; gRPC over loopback in this process with
// tap rows 1 raw f32, 2 fused f32, 3 raw bf16, 4 fused bf16. Fused rows are the drafter's hidden
// wide (256 for the demo pair, 5,120 for the 27B) and come from a copying stand-in for TapFuser,
// so the figures are the transport's; the real fc + hidden_norm is a GEMM the target's backend
// runs. Counters per round: bytes sent to the drafter, time inside DraftChannel::Commit (the
// engine thread's share of sending), time blocked in Await (waiting for the proposal), and the CPU
// time of the whole process (engine, gRPC and drafter threads) per round, which a loaded machine
// distorts far less than wall time.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <memory>

#include "benchmark/benchmark.h"
#include "services/drafter/server/drafter_service.h"
#include "services/rpc/server_runner.h"
#include "services/target/engine/in_process_draft_channel.h"
#include "services/target/engine/lane_engine.h"
#include "services/target/server/grpc_draft_channel.h"
#include "spdlog/spdlog.h"
#include "tests/integration/toy_models.h"
#include "tests/testing/summary_sink.h"

namespace twinspan {
namespace {

// Times the engine's calls into the channel it wraps.
class TimingChannel : public engine::DraftChannel {
 public:
  explicit TimingChannel(engine::DraftChannel* inner) : inner_(inner) {}
  bool ready() const override { return inner_->ready(); }
  engine::DrafterInfo peer() const override { return inner_->peer(); }
  uint64_t epoch() const override { return inner_->epoch(); }
  absl::Status Open(const engine::DraftOpen& open) override { return inner_->Open(open); }
  absl::Status Commit(const engine::DraftCommit& commit) override {
    const auto start = std::chrono::steady_clock::now();
    absl::Status s = inner_->Commit(commit);
    commit_ns += Since(start);
    return s;
  }
  void Close(uint64_t stream_id) override { inner_->Close(stream_id); }
  absl::StatusOr<engine::DraftProposal> Await(uint64_t stream_id, uint32_t round,
                                              absl::Time deadline) override {
    const auto start = std::chrono::steady_clock::now();
    auto r = inner_->Await(stream_id, round, deadline);
    await_ns += Since(start);
    return r;
  }
  std::atomic<int64_t> commit_ns{0}, await_ns{0};

 private:
  static int64_t Since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                start)
        .count();
  }
  engine::DraftChannel* inner_;
};

double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

void BM_Round(benchmark::State& state) {
  spdlog::set_level(spdlog::level::warn);
  const int tap_floats = static_cast<int>(state.range(0));
  const int transport = static_cast<int>(state.range(1));
  const bool use_grpc = transport >= 1;
  const bool fused = transport == 2 || transport == 4;
  const bool bf16 = transport >= 3;
  // The drafter's hidden: the 27B's 5,120 for five 5,120 taps, else half the raw row (2 taps).
  const int64_t fused_width = tap_floats == 25600 ? 5120 : std::max(1, tap_floats / 2);
  constexpr int kVocab = 97;
  testing::ToyVerifier model(kVocab, 1 << 16, 96, /*hidden_size=*/tap_floats / 2);
  testing::ToyDrafter drafter(kVocab, /*block_size=*/8, /*miss_every=*/3, tap_floats, fused_width);
  testing::ToyTapFusion fusion(tap_floats, fused_width);
  testing::ToySampler sampler;
  std::unique_ptr<rpc::DrafterService> service;
  std::unique_ptr<rpc::RunningServer> server;
  std::unique_ptr<engine::DraftChannel> channel;
  rpc::GrpcDraftChannel* grpc = nullptr;
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
    if (fused) o.fusion = &fusion;
    o.bf16_taps = bf16;
    auto grpc_channel = rpc::GrpcDraftChannel::Start(o);
    grpc = grpc_channel.get();
    if (!grpc_channel->WaitReady(absl::Seconds(10))) state.SkipWithError("drafter not ready");
    channel = std::move(grpc_channel);
  } else {
    channel = std::make_unique<engine::InProcessDraftChannel>(&drafter);
  }
  engine::EngineOptions options;
  options.parallel = 1;
  options.max_tokens_limit = 1 << 16;
  options.draft_timeout = absl::Seconds(5);
  TimingChannel timed(channel.get());
  auto engine = *engine::LaneEngine::Start(options, &model, &sampler, &timed, nullptr);
  const int64_t bytes_before = grpc != nullptr ? grpc->bytes_sent() : 0;
  int64_t rounds = 0, tokens = 0, which = 0;
  const double cpu_before = ProcessCpuSeconds();
  for (auto _ : state) {
    engine::EngineRequest r;
    r.request_id = "bench";
    for (int i = 0; i < 16; ++i) r.prompt_ids.push_back((which * 13 + i * 7) % 90);
    ++which;
    r.max_tokens = 256;
    r.ignore_eos = true;
    auto sink = std::make_shared<testing::SummarySink>();
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
  const double per_round = rounds ? 1.0 / static_cast<double>(rounds) : 0;
  state.counters["cpu_us_per_round"] = (ProcessCpuSeconds() - cpu_before) * 1e6 * per_round;
  state.counters["bytes_per_round"] =
      grpc != nullptr ? static_cast<double>(grpc->bytes_sent() - bytes_before) * per_round : 0;
  state.counters["commit_us_per_round"] =
      static_cast<double>(timed.commit_ns.load()) * 1e-3 * per_round;
  state.counters["await_us_per_round"] =
      static_cast<double>(timed.await_ns.load()) * 1e-3 * per_round;
  engine.reset();
}
BENCHMARK(BM_Round)
    ->ArgsProduct({{512, 25600}, {0, 1, 2, 3, 4}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

}  // namespace
}  // namespace twinspan

BENCHMARK_MAIN();
