// Encode / decode throughput of the tokenizer on generated mixed English prose and code (and CJK),
// single-threaded. TWINSPAN_TOKENIZER names the tokenizer folder (default: the golden Qwen3 one).
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/tokenizer/tokenizer.h"

namespace twinspan::tokenizer {
namespace {

std::string TokenizerDir() {
  const char* dir = std::getenv("TWINSPAN_TOKENIZER");
  return dir != nullptr ? std::string(dir) : std::string(TWINSPAN_BENCH_TOKENIZER_DIR);
}

// About `bytes` of English prose interleaved with C++, Python and JSON, from a fixed seed.
std::string MixedText(size_t bytes, uint32_t seed) {
  static const char* const kWords[] = {
      "the",         "of",           "and",      "to",         "in",       "is",     "was",
      "for",         "that",         "with",     "as",         "on",       "by",     "it",
      "from",        "which",        "this",     "be",         "or",       "have",   "not",
      "but",         "one",          "all",      "their",      "they",     "model",  "token",
      "server",      "request",      "latency",  "throughput", "decoding", "cache",  "memory",
      "Speculative", "verification", "accepted", "rounds",     "GPU",      "kernel", "batch",
      "stream"};
  static const char* const kCode[] = {
      "for (size_t i = 0; i < n; ++i) {\n    total += values[i] * scale;\n}\n",
      "def forward(self, x, mask=None):\n    h = self.norm(x)\n    return self.proj(h) + x\n",
      "{\"model\": \"qwen3\", \"max_tokens\": 256, \"temperature\": 0.7, \"stop\": [\"\\n\\n\"]}\n",
      "absl::StatusOr<std::vector<int32_t>> ids = tokenizer->Encode(text);\n",
      "if err != nil {\n\treturn fmt.Errorf(\"open %s: %w\", path, err)\n}\n",
      "SELECT id, name FROM users WHERE created_at > '2026-01-01' ORDER BY id;\n"};
  std::mt19937 rng(seed);
  std::string out;
  out.reserve(bytes + 256);
  while (out.size() < bytes) {
    if (rng() % 4 == 0) {
      out += kCode[rng() % (sizeof(kCode) / sizeof(kCode[0]))];
      continue;
    }
    const int words = 8 + rng() % 20;
    for (int w = 0; w < words; ++w) {
      if (w > 0) out += ' ';
      out += kWords[rng() % (sizeof(kWords) / sizeof(kWords[0]))];
      if (rng() % 11 == 0) out += std::to_string(rng() % 100000);
    }
    out += rng() % 3 == 0 ? ".\n\n" : ". ";
  }
  return out;
}

std::string CjkText(size_t bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out;
  while (out.size() < bytes) {
    const uint32_t cp = 0x4E00 + rng() % 0x5000;
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
    if (rng() % 12 == 0) out += "\xEF\xBC\x8C";  // fullwidth comma
  }
  return out;
}

const Tokenizer& Shared() {
  static const Tokenizer* tokenizer = [] {
    auto t = Tokenizer::Open(TokenizerDir());
    if (!t.ok()) {
      std::fprintf(stderr, "tokenizer_bench: %s\n", t.status().ToString().c_str());
      std::exit(1);
    }
    return t->release();
  }();
  return *tokenizer;
}

void EncodeText(benchmark::State& state, const std::string& text, const Tokenizer& tokenizer) {
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = tokenizer.Encode(text);
    if (!ids.ok()) {
      state.SkipWithError(ids.status().ToString().c_str());
      return;
    }
    tokens = ids->size();
    benchmark::DoNotOptimize(ids->data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["bytes_per_token"] =
      static_cast<double>(text.size()) / static_cast<double>(tokens);
}

// Steady state: the piece cache is warm after the first iteration.
void BM_EncodeMixedEnglishCode(benchmark::State& state) {
  static const std::string text = MixedText(4 << 20, 7);
  EncodeText(state, text, Shared());
}
BENCHMARK(BM_EncodeMixedEnglishCode)->Unit(benchmark::kMillisecond)->MinTime(3.0);

// A fresh tokenizer for every pass: the piece cache starts empty (loading is not timed).
void BM_EncodeMixedEnglishCodeColdCache(benchmark::State& state) {
  static const std::string text = MixedText(4 << 20, 11);
  size_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto tokenizer = Tokenizer::Open(TokenizerDir());
    if (!tokenizer.ok()) {
      state.SkipWithError(tokenizer.status().ToString().c_str());
      return;
    }
    state.ResumeTiming();
    auto ids = (*tokenizer)->Encode(text);
    benchmark::DoNotOptimize(ids);
    bytes += text.size();
    state.PauseTiming();
    tokenizer->reset();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(BM_EncodeMixedEnglishCodeColdCache)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_EncodeCjk(benchmark::State& state) {
  static const std::string text = CjkText(2 << 20, 5);
  EncodeText(state, text, Shared());
}
BENCHMARK(BM_EncodeCjk)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_DecodeMixedEnglishCode(benchmark::State& state) {
  static const std::string text = MixedText(4 << 20, 7);
  const auto ids = Shared().Encode(text);
  if (!ids.ok()) {
    state.SkipWithError(ids.status().ToString().c_str());
    return;
  }
  for (auto _ : state) {
    auto decoded = Shared().Decode(*ids);
    benchmark::DoNotOptimize(decoded);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_DecodeMixedEnglishCode)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace
}  // namespace twinspan::tokenizer

BENCHMARK_MAIN();
