// One drafter step (a block of 16 after 256 context rows) of the committed demo drafter with its
// full head and with its two-span head, side by side in one run (run by hand; docs/perf.md).
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "kernels/cpu/parallel.h"
#include "services/drafter/drafter.h"

namespace twinspan {
namespace {

void BM_DrafterStep(benchmark::State& state, const std::string& head) {
  cpu::ThreadPool pool(static_cast<int>(state.range(0)));
  const std::string demo = TWINSPAN_DEMO_DIR;
  auto drafter = drafter::Drafter::Open(demo + "/drafter", demo + "/target",
                                        {.model = {.pool = &pool, .context = 1024}, .head = head});
  if (!drafter.ok()) {
    state.SkipWithError(std::string(drafter.status().message()).c_str());
    return;
  }
  const drafter::Drafter& d = **drafter;
  const int64_t rows = 256;
  const int64_t width = d.config().num_taps() * d.config().hidden_size;
  std::vector<float> taps(rows * width);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& t : taps) t = normal(rng);
  auto stream = d.NewStream();
  if (!stream.ok() || !d.AppendTaps(**stream, drafter::TapForm::kRaw, taps, rows).ok()) {
    state.SkipWithError("cannot open a stream with 256 rows");
    return;
  }
  for (auto _ : state) {
    auto proposal = d.Propose(**stream, 42, {});
    if (!proposal.ok()) state.SkipWithError(std::string(proposal.status().message()).c_str());
    benchmark::DoNotOptimize(proposal);
  }
  state.counters["columns"] = static_cast<double>(d.head().columns());
}

BENCHMARK_CAPTURE(BM_DrafterStep, full, std::string("full"))
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DrafterStep, two_span, std::string("two-span"))
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace twinspan

BENCHMARK_MAIN();
