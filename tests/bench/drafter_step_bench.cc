// One drafter step (a block of 16 after 256 context rows) of the committed demo drafter with its
// full head and with its two-span head, side by side in one run (run by hand; docs/perf.md).
#include <cstdint>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "kernels/cpu/parallel.h"
#include "services/drafter/drafter.h"
#include "tests/bench/noise_stream.h"

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
  auto stream = NoiseStream(d, 256);
  if (!stream.ok()) {
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
