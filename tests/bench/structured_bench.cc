// Structured output's cost per sampled row on a real vocabulary (the Qwen3 tokenizer, 151,669 ids;
// TWINSPAN_TOKENIZER names another folder): TokenConstraint::AllowedNext (the trie walk with PCRE2
// partial matches) at the start of an output and deep into one, Advance, and cpu::MaskLogits.
// Single-threaded, as the engine thread runs them.
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/tokenizer/tokenizer.h"
#include "kernels/cpu/mask_logits.h"
#include "services/structured/grammar_constraint.h"

namespace twinspan::structured {
namespace {

std::string TokenizerDir() {
  const char* dir = std::getenv("TWINSPAN_TOKENIZER");
  return dir != nullptr ? std::string(dir) : std::string(TWINSPAN_BENCH_TOKENIZER_DIR);
}

struct Vocab {
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<GrammarCompiler> compiler;
};

// The tokenizer and a compiler over its trie, as TargetStack builds them; made once.
const Vocab& SharedVocab() {
  static const Vocab* vocab = [] {
    auto* v = new Vocab;
    auto tok = tokenizer::Tokenizer::Open(TokenizerDir());
    if (!tok.ok()) {
      std::fprintf(stderr, "%s\n", tok.status().ToString().c_str());
      std::exit(2);
    }
    v->tokenizer = *std::move(tok);
    std::vector<std::optional<std::string>> bytes(v->tokenizer->vocab_size());
    for (int32_t id = 0; id < v->tokenizer->vocab_size(); ++id) {
      if (v->tokenizer->IsSpecial(id)) continue;
      if (auto b = v->tokenizer->TokenBytes(id)) bytes[id] = std::string(*b);
    }
    const std::vector<uint32_t> eos = {static_cast<uint32_t>(v->tokenizer->vocab_size() - 1)};
    v->compiler = std::make_unique<GrammarCompiler>(std::make_shared<VocabTrie>(bytes), eos);
    return v;
  }();
  return *vocab;
}

// The http test's schema: an object with a bounded string, an integer and an enum array.
constexpr char kSchema[] =
    R"({"type":"object","properties":{"name":{"type":"string","maxLength":16},)"
    R"("age":{"type":"integer"},"langs":{"type":"array","items":{"enum":["python","c++",)"
    R"("rust"]},"maxItems":3}},"required":["name","age","langs"]})";
// A free-text field: the widest mask (most of the vocabulary stays allowed).
constexpr char kFreeText[] =
    R"({"type":"object","properties":{"notes":{"type":"string"}},"required":["notes"]})";
constexpr char kGbnf[] =
    "root ::= \"def \" name \"(\" (name (\", \" name)*)? \"):\"\nname ::= [a-z_]{1,12}\n";

struct Case {
  const char* name;
  GrammarSpec spec;
  std::string prefix;  // the output so far, encoded and advanced before timing
};

std::vector<Case> Cases() {
  const std::string notes(1024, 'x');
  return {
      {"schema/start", {GrammarKind::kJsonSchema, kSchema}, ""},
      {"schema/mid", {GrammarKind::kJsonSchema, kSchema}, R"({"name": "Ada", "age": 36, "la)"},
      {"free_text/start", {GrammarKind::kJsonSchema, kFreeText}, ""},
      {"free_text/in_string", {GrammarKind::kJsonSchema, kFreeText}, R"({"notes": ")"},
      {"free_text/256B",
       {GrammarKind::kJsonSchema, kFreeText},
       R"({"notes": ")" + std::string(notes, 0, 256)},
      {"free_text/1KiB", {GrammarKind::kJsonSchema, kFreeText}, R"({"notes": ")" + notes},
      {"gbnf/mid", {GrammarKind::kGbnf, kGbnf}, "def parse_args(argv, "},
      {"regex/csv",
       {GrammarKind::kRegex, "(0|[1-9][0-9]{0,3})(, (0|[1-9][0-9]{0,3})){2,50}"},
       "12, 7, 3051, 0, 44"},
  };
}

// A constraint at `prefix` (advanced id by id as the engine would).
std::unique_ptr<engine::TokenConstraint> At(const Case& c, benchmark::State& state) {
  const Vocab& v = SharedVocab();
  auto constraint = v.compiler->Compile(c.spec);
  if (!constraint.ok()) {
    state.SkipWithError(constraint.status().ToString().c_str());
    return nullptr;
  }
  auto ids = v.tokenizer->Encode(c.prefix);
  if (!ids.ok()) {
    state.SkipWithError(ids.status().ToString().c_str());
    return nullptr;
  }
  for (int32_t id : *ids) {
    if (absl::Status s = (*constraint)->Advance(static_cast<uint32_t>(id)); !s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return nullptr;
    }
  }
  return *std::move(constraint);
}

void BM_AllowedNext(benchmark::State& state, const Case& c) {
  std::unique_ptr<engine::TokenConstraint> constraint = At(c, state);
  if (constraint == nullptr) return;
  engine::TokenMask mask;
  int64_t allowed = 0;
  for (auto _ : state) {
    absl::Status s = constraint->AllowedNext(&mask);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(mask.words.data());
  }
  for (uint32_t w : mask.words) allowed += __builtin_popcount(w);
  state.counters["allowed_ids"] = static_cast<double>(allowed);
}

void BM_CompileAndFirstMask(benchmark::State& state) {
  const Vocab& v = SharedVocab();
  engine::TokenMask mask;
  for (auto _ : state) {
    auto constraint = v.compiler->Compile({GrammarKind::kJsonSchema, kSchema});
    if (!constraint.ok()) state.SkipWithError(constraint.status().ToString().c_str());
    absl::Status s = (*constraint)->AllowedNext(&mask);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_CompileAndFirstMask)->Unit(benchmark::kMillisecond);

// A row's logits masked on the host (the CPU backend's and the engine's sampler path) with a real
// mask: narrow (a few ids allowed) or wide (inside a JSON string, most ids allowed).
void BM_MaskLogitsRow(benchmark::State& state, const Case& c) {
  std::unique_ptr<engine::TokenConstraint> constraint = At(c, state);
  if (constraint == nullptr) return;
  engine::TokenMask mask;
  if (absl::Status s = constraint->AllowedNext(&mask); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  const int64_t vocab = SharedVocab().tokenizer->vocab_size();
  std::vector<float> logits(vocab);
  for (auto _ : state) {
    absl::Status s = cpu::MaskLogits({}, logits.data(), vocab, vocab, mask.words.data(), 1);
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(logits.data());
  }
}

const bool kRegistered = [] {
  static const std::vector<Case> cases = Cases();
  for (const Case& c : cases) {
    benchmark::RegisterBenchmark((std::string("BM_AllowedNext/") + c.name).c_str(),
                                 [&c](benchmark::State& s) { BM_AllowedNext(s, c); })
        ->Unit(benchmark::kMillisecond);
  }
  static const Case& narrow = cases[1];
  static const Case& wide = cases[3];
  for (const Case* c : {&narrow, &wide}) {
    benchmark::RegisterBenchmark(
        (std::string("BM_MaskLogitsRow/") + (c == &narrow ? "narrow" : "wide")).c_str(),
        [c](benchmark::State& s) { BM_MaskLogitsRow(s, *c); })
        ->Unit(benchmark::kMicrosecond);
  }
  return true;
}();

}  // namespace
}  // namespace twinspan::structured

BENCHMARK_MAIN();
