// One verify round of four streams on the CPU target: ONE ForwardBatch of the four windows
// against four Forwards back to back (what the engine did before), on random qwen3 targets at
// the demo target's shapes (make-demo: 4 layers, hidden 256, MLP 512, 4 / 2 heads x 64, vocab
// 512; 10 MB of fp32 weights) and at a wider shape whose weights (58 MB) leave the caches. Each
// stream holds a 64-token prompt; a round is the forward(s) of `rows` rows per stream plus
// Commit(0) each, so every iteration sees the same state. Run by hand (docs/perf.md), e.g.
//   build/tests/bench/target_batch_bench --benchmark_repetitions=15 \
//     --benchmark_report_aggregates_only=true
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/parallel.h"
#include "services/target/qwen3_model.h"
#include "tests/unit/target_random_model.h"

namespace twinspan::target {
namespace {

constexpr int kStreams = 4;
constexpr int64_t kPromptTokens = 64;

TargetConfig Shape(int64_t which) {
  TargetConfig c = testing::TinyQwen3Config();
  c.num_layers = 4;
  c.num_heads = which == 0 ? 4 : 8;
  c.num_kv_heads = which == 0 ? 2 : 4;
  c.head_dim = 64;
  c.rotary_dim = 64;
  c.hidden_size = which == 0 ? 256 : 512;
  c.intermediate_size = which == 0 ? 512 : 1536;
  c.vocab_size = which == 0 ? 512 : 4096;
  c.layer_types.assign(c.num_layers, LayerType::kFullAttention);
  return c;
}

class FourStreamRound : public benchmark::Fixture {
 public:
  void SetUp(const benchmark::State& state) override {
    pool_ = std::make_unique<cpu::ThreadPool>(std::max(1u, std::thread::hardware_concurrency()));
    backend_ = cpu::NewCpuBackend(pool_.get());
    TargetOptions options;
    options.backend = backend_.get();
    options.context = 256;
    model_ = testing::RandomQwen3Model(options, 1, Shape(state.range(0)));
    std::mt19937 rng(2);
    const int64_t vocab = model_->config().vocab_size;
    std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocab - 1));
    for (int s = 0; s < kStreams; ++s) {
      std::vector<int32_t> prompt(kPromptTokens);
      for (int32_t& t : prompt) t = token(rng);
      states_.push_back(*model_->NewSequence());
      Prefill(*model_, *states_.back(), prompt, kPromptTokens, {}).IgnoreError();
      windows_.emplace_back(state.range(1));
      for (int32_t& t : windows_.back()) t = token(rng);
    }
  }
  void TearDown(const benchmark::State&) override {
    states_.clear();
    windows_.clear();
    model_.reset();
    backend_.reset();
    pool_.reset();
  }

 protected:
  std::unique_ptr<cpu::ThreadPool> pool_;
  std::unique_ptr<backend::Backend> backend_;
  std::unique_ptr<Qwen3Model> model_;
  std::vector<std::unique_ptr<SequenceState>> states_;
  std::vector<std::vector<int32_t>> windows_;
};

// Args: shape (0 demo, 1 wide), rows per stream, batched (1: one ForwardBatch, 0: a Forward per
// stream).
BENCHMARK_DEFINE_F(FourStreamRound, Verify)(benchmark::State& state) {
  std::vector<ForwardRequest> requests(kStreams);
  std::vector<ForwardResult> results(kStreams);
  std::vector<SequenceForward> batch;
  for (int s = 0; s < kStreams; ++s) {
    requests[s].tokens = windows_[s];
    batch.push_back({states_[s].get(), &requests[s], &results[s]});
  }
  const bool batched = state.range(2) == 1;
  for (auto _ : state) {
    if (batched) {
      if (!model_->ForwardBatch(batch).ok()) state.SkipWithError("ForwardBatch failed");
    } else {
      for (int s = 0; s < kStreams; ++s) {
        if (!model_->Forward(*states_[s], requests[s], &results[s]).ok()) {
          state.SkipWithError("Forward failed");
        }
      }
    }
    for (int s = 0; s < kStreams; ++s) model_->Commit(*states_[s], 0).IgnoreError();
    benchmark::DoNotOptimize(results[0].logits.data());
  }
}
BENCHMARK_REGISTER_F(FourStreamRound, Verify)
    ->ArgNames({"shape", "rows", "batched"})
    ->ArgsProduct({{0, 1}, {1, 8}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace twinspan::target

BENCHMARK_MAIN();
