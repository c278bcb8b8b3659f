// twinspan_prefix_bench: time to first token of a long prompt sent again with a new suffix
// (resumed from the target's prompt-prefix cache) against fresh prompts of the same length, side
// by side in one run, through the serving stack without gRPC (TargetStack: the verifier, its
// prefix cache, the lane engine and, on a GPU, device sampling). TTFT is the engine's own, from
// the request's arrival to its first token (GenerateFinal.timings.first_token_seconds). Prompts
// are seeded random ids; the warm-up prompt is run again last and must give the tokens it gave
// fresh (resumed == fresh). Exit 1 when it does not or a request fails.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "services/target/server/target_stack.h"
#include "spdlog/spdlog.h"
#include "tests/testing/summary_sink.h"

namespace {

using twinspan::engine::EngineRequest;
using twinspan::engine::StreamSummary;

struct Options {
  twinspan::serving::TargetStackOptions stack;
  int64_t prefix_tokens = 4096;
  int64_t suffix_tokens = 64;
  int reps = 5;
  int max_tokens = 4;
};

std::vector<uint32_t> RandomIds(std::mt19937& rng, int64_t n, int vocab) {
  std::uniform_int_distribution<uint32_t> id(0, static_cast<uint32_t>(vocab - 1));
  std::vector<uint32_t> ids(n);
  for (uint32_t& x : ids) x = id(rng);
  return ids;
}

absl::StatusOr<StreamSummary> Run(twinspan::engine::LaneEngine& engine, std::vector<uint32_t> ids,
                                  int max_tokens, const std::string& id) {
  EngineRequest r;
  r.request_id = id;
  r.prompt_ids = std::move(ids);
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  auto sink = std::make_shared<twinspan::testing::SummarySink>();
  if (absl::Status s = engine.Submit(std::move(r), sink); !s.ok()) return s;
  return sink->Wait();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int Main(const Options& o) {
  auto stack = twinspan::serving::TargetStack::Open(o.stack, nullptr, nullptr);
  if (!stack.ok()) {
    std::fprintf(stderr, "prefix bench: %s\n", stack.status().ToString().c_str());
    return 2;
  }
  twinspan::engine::LaneEngine& engine = (*stack)->engine();
  const auto& info = engine.model().info();
  std::mt19937 rng(20261204);
  const std::vector<uint32_t> shared = RandomIds(rng, o.prefix_tokens, info.vocab_size);
  auto with_suffix = [&](std::vector<uint32_t> head) {
    const std::vector<uint32_t> tail = RandomIds(rng, o.suffix_tokens, info.vocab_size);
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  const std::vector<uint32_t> warm = with_suffix(shared);
  auto first = Run(engine, warm, o.max_tokens, "warm");  // fresh: caches the shared prefix
  if (!first.ok()) {
    std::fprintf(stderr, "prefix bench: warm-up: %s\n", first.status().ToString().c_str());
    return 1;
  }
  std::vector<double> fresh_s, resumed_s;
  int64_t cached = -1;
  for (int r = 0; r < o.reps; ++r) {
    auto fresh = Run(engine, with_suffix(RandomIds(rng, o.prefix_tokens, info.vocab_size)),
                     o.max_tokens, "fresh-" + std::to_string(r));
    auto resumed = Run(engine, with_suffix(shared), o.max_tokens, "resumed-" + std::to_string(r));
    if (!fresh.ok() || !resumed.ok()) {
      std::fprintf(stderr, "prefix bench: rep %d: %s / %s\n", r, fresh.status().ToString().c_str(),
                   resumed.status().ToString().c_str());
      return 1;
    }
    if (fresh->cached_prompt_tokens != 0) {
      std::fprintf(stderr, "prefix bench: a fresh prompt resumed %d tokens\n",
                   fresh->cached_prompt_tokens);
      return 1;
    }
    fresh_s.push_back(fresh->first_token_seconds);
    resumed_s.push_back(resumed->first_token_seconds);
    cached = resumed->cached_prompt_tokens;
  }
  auto again = Run(engine, warm, o.max_tokens, "warm-again");
  const bool exact = again.ok() && again->completion_ids == first->completion_ids &&
                     again->cached_prompt_tokens > 0;
  const double f = Median(fresh_s), r = Median(resumed_s);
  std::printf("model %s (%s) on %s, context %lld, prefix cache %lld MiB in blocks of %lld\n",
              o.stack.model_dir.c_str(), info.model_type.c_str(), info.backend.c_str(),
              static_cast<long long>(o.stack.context),
              static_cast<long long>(o.stack.prefix_cache_mb),
              static_cast<long long>(o.stack.prefix_block_tokens));
  std::printf("prompt %lld + %lld tokens, %d reps, %d tokens each\n",
              static_cast<long long>(o.prefix_tokens), static_cast<long long>(o.suffix_tokens),
              o.reps, o.max_tokens);
  std::printf("TTFT fresh   median %9.3f ms (min %.3f, max %.3f)\n", f * 1e3,
              *std::min_element(fresh_s.begin(), fresh_s.end()) * 1e3,
              *std::max_element(fresh_s.begin(), fresh_s.end()) * 1e3);
  std::printf("TTFT resumed median %9.3f ms (min %.3f, max %.3f), %lld prompt tokens resumed\n",
              r * 1e3, *std::min_element(resumed_s.begin(), resumed_s.end()) * 1e3,
              *std::max_element(resumed_s.begin(), resumed_s.end()) * 1e3,
              static_cast<long long>(cached));
  std::printf("speedup %.1fx; resumed == fresh: %s\n", r > 0 ? f / r : 0.0,
              exact ? "equal" : "NOT EQUAL");
  return exact ? 0 : 1;
}

}  // namespace

// CLI11_PARSE catches CLI11's own exceptions; any other (bad_alloc) should end the program.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  CLI::App app{"twinspan_prefix_bench: TTFT of a prompt resumed from the prefix cache vs fresh"};
  Options o;
  o.stack.parallel = 1;
  o.stack.context = 8192;
  o.stack.prefix_cache_mb = 4096;
  app.add_option("--model", o.stack.model_dir, "Target checkpoint folder")->required();
  app.add_option("--device", o.stack.device, "cpu or cuda:N");
  app.add_option("--threads", o.stack.threads, "CPU threads (0: all)");
  app.add_option("--context", o.stack.context, "Positions per stream");
  app.add_option("--prefix-cache-mb", o.stack.prefix_cache_mb, "Prefix cache bound, MiB");
  app.add_option("--prefix-block-tokens", o.stack.prefix_block_tokens, "Prefix cache block");
  app.add_option("--prefix-tokens", o.prefix_tokens, "Shared prompt prefix, tokens")
      ->check(CLI::PositiveNumber);
  app.add_option("--suffix-tokens", o.suffix_tokens, "New suffix per prompt, tokens")
      ->check(CLI::PositiveNumber);
  app.add_option("--reps", o.reps, "Fresh and resumed prompts timed (median)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-tokens", o.max_tokens, "Tokens per request")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  o.stack.max_prompt_tokens = 0;
  o.stack.max_tokens_limit = std::max(o.max_tokens, 1);
  spdlog::set_level(spdlog::level::warn);
  return Main(o);
}
