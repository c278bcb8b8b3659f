// The steps of one speculative round on the CPU with the committed demo pair (models/demo), after
// a context of range(1) tokens: the target's forward of range(0) rows (1 is a plain decoding step,
// 16 a full verify window) with the drafter's taps and every row's logits, then Commit(0) so each
// iteration sees the same state; and the drafter's step (a block of 16 with the two-span head).
// A round costs TargetRows/16 + DrafterStep against TargetRows/1 per plain token. Run by hand
// (docs/perf.md), e.g.
//   build/tests/bench/demo_round_bench --benchmark_repetitions=9
//     (--benchmark_report_aggregates_only=true for medians only)
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "kernels/cpu/parallel.h"
#include "services/drafter/drafter.h"
#include "services/target/target_model.h"
#include "tests/bench/noise_stream.h"

namespace twinspan {
namespace {

constexpr int kThreads = 2;  // The development VM's cores.

std::string DemoDir() { return TWINSPAN_DEMO_DIR; }

// Random ids below the special tail: attention's cost depends on the context's length only.
std::vector<int32_t> Context(int64_t tokens, int64_t vocab) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(vocab) - 257);
  std::vector<int32_t> ids(tokens);
  for (int32_t& t : ids) t = id(rng);
  return ids;
}

void BM_TargetRows(benchmark::State& state) {
  cpu::ThreadPool pool(kThreads);
  auto model = target::OpenTargetModel(DemoDir() + "/target", {.pool = &pool, .context = 2048});
  if (!model.ok()) return state.SkipWithError(std::string(model.status().message()).c_str());
  const int64_t vocab = (*model)->config().vocab_size;
  auto sequence = (*model)->NewSequence();
  const std::vector<int64_t> taps = {1, 5, 9};  // The demo drafter's target_layer_ids.
  if (!sequence.ok() ||
      !target::Prefill(**model, **sequence, Context(state.range(1), vocab), 256, taps).ok()) {
    return state.SkipWithError("cannot prefill the context");
  }
  const std::vector<int32_t> window = Context(state.range(0), vocab);
  target::ForwardRequest request;
  request.tokens = window;
  request.tap_layer_ids = taps;
  target::ForwardResult result;
  for (auto _ : state) {
    if (!(*model)->Forward(**sequence, request, &result).ok() ||
        !(*model)->Commit(**sequence, 0).ok()) {
      return state.SkipWithError("forward failed");
    }
    benchmark::DoNotOptimize(result.logits.data());
  }
}

void BM_DrafterStep(benchmark::State& state) {
  cpu::ThreadPool pool(kThreads);
  auto drafter = drafter::Drafter::Open(DemoDir() + "/drafter", DemoDir() + "/target",
                                        {.model = {.pool = &pool, .context = 2048}});
  if (!drafter.ok()) return state.SkipWithError(std::string(drafter.status().message()).c_str());
  const drafter::Drafter& d = **drafter;
  const int64_t rows = state.range(1);
  auto stream = NoiseStream(d, rows);
  if (!stream.ok()) return state.SkipWithError("cannot fill the drafter's context");
  for (auto _ : state) {
    auto proposal = d.Propose(**stream, 42, {});
    if (!proposal.ok()) return state.SkipWithError("propose failed");
    benchmark::DoNotOptimize(proposal);
  }
}

BENCHMARK(BM_TargetRows)
    ->ArgNames({"rows", "context"})
    ->ArgsProduct({{1, 2, 4, 8, 12, 16}, {512}})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();
BENCHMARK(BM_DrafterStep)
    ->ArgNames({"block", "context"})
    ->Args({16, 512})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

}  // namespace
}  // namespace twinspan

BENCHMARK_MAIN();
