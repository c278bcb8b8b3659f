// The CPU EXL3 linear at the trained demo target's shapes (hidden 384, MLP 1024, 6 / 2 heads x 64,
// vocab 8192; body K = 4, head K = 6, mul1), a whole random EXL3 qwen3 target of that shape (8
// layers) through the CPU backend (one row: plain decoding; 16 rows: a verify window), and the
// drafter's two-span head and dense linears at those shapes. It uses only cpu::Linear,
// cpu::Exl3SpanLinear and the target's Forward, so the same source builds against older trees for
// before/after runs (docs/perf.md). Run by hand, e.g.
//   build/tests/bench/exl3_linear_bench --benchmark_repetitions=9
//     --benchmark_report_aggregates_only=true
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/exl3/span_view.h"
#include "common/exl3/weight.h"
#include "common/safetensors/checkpoint.h"
#include "common/safetensors/writer.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/exl3_span_linear.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/parallel.h"
#include "services/target/qwen3_model.h"
#include "tests/unit/formats_exl3_fixture.h"
#include "tests/unit/target_random_model.h"

namespace twinspan {
namespace {

constexpr int64_t kHidden = 384, kMlp = 1024, kVocab = 8192, kLayers = 8, kHeadDim = 64;
constexpr int64_t kHeads = 6, kKvHeads = 2;
constexpr int64_t kPromptTokens = 64;

struct Shape {
  int64_t k, n;
  int bits;
};
// q / o, k / v, gate / up, down, lm_head.
constexpr Shape kShapes[] = {
    {384, 384, 4}, {384, 128, 4}, {384, 1024, 4}, {1024, 384, 4}, {384, 8192, 6}};

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "_" + std::to_string(getpid()) + ".safetensors"))
      .string();
}

// Writes the linears to one file and opens it; the caller keeps the checkpoint alive.
std::unique_ptr<Checkpoint> WriteLinears(const std::string& name,
                                         const std::vector<testing::SyntheticLinear>& specs) {
  std::vector<OwnedTensor> tensors;
  for (const testing::SyntheticLinear& spec : specs) {
    for (OwnedTensor& t : testing::SyntheticTensors(spec)) tensors.push_back(std::move(t));
  }
  const std::string path = TempPath(name);
  if (!WriteSafetensors(path, tensors).ok()) return nullptr;
  auto ckpt = Checkpoint::Open(path);
  std::filesystem::remove(path);  // The map stays valid after the name goes.
  return ckpt.ok() ? *std::move(ckpt) : nullptr;
}

// FNV-1a of the output's bits, as a counter (exact in a double): before and after builds must
// print the same value.
double OutputHash(const std::vector<float>& v) {
  uint32_t h = 2166136261u;
  for (const float f : v) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    for (int i = 0; i < 4; ++i) h = (h ^ ((bits >> (8 * i)) & 0xff)) * 16777619u;
  }
  return h;
}

int PoolSize(int64_t arg) {
  return arg > 0 ? static_cast<int>(arg) : static_cast<int>(std::thread::hardware_concurrency());
}

class Exl3LinearShape : public benchmark::Fixture {
 public:
  void SetUp(const benchmark::State& state) override {
    const Shape& s = kShapes[state.range(0)];
    checkpoint_ = WriteLinears("exl3_bench", {{.prefix = "w",
                                               .k = s.k,
                                               .n = s.n,
                                               .bits = s.bits,
                                               .codebook = exl3::Codebook::kMul1,
                                               .seed = 5}});
    weight_ = cpu::LinearWeight::Exl3(*exl3::Weight::Load(*checkpoint_, "w"));
    const int threads = PoolSize(state.range(2));
    if (threads > 1) pool_ = std::make_unique<cpu::ThreadPool>(threads);
  }
  void TearDown(const benchmark::State&) override {
    pool_.reset();
    weight_ = {};
    checkpoint_.reset();
  }

 protected:
  std::unique_ptr<Checkpoint> checkpoint_;
  cpu::LinearWeight weight_;
  std::unique_ptr<cpu::ThreadPool> pool_;
};

// Args: shape (index into kShapes), rows, threads (the pool's size; 0: every core).
// cppcheck-suppress unknownMacro
BENCHMARK_DEFINE_F(Exl3LinearShape, Linear)(benchmark::State& state) {
  const int64_t rows = state.range(1);
  const std::vector<float> x = testing::RandomRows(rows, weight_.in_features(), 3);
  std::vector<float> y(rows * weight_.out_features());
  const cpu::Context ctx{pool_.get()};
  for (auto _ : state) {
    if (!cpu::Linear(ctx, x.data(), rows, weight_, y.data()).ok()) state.SkipWithError("Linear");
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["y_hash"] = OutputHash(y);
  state.counters["weights/s"] =
      benchmark::Counter(static_cast<double>(weight_.in_features() * weight_.out_features()),
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_REGISTER_F(Exl3LinearShape, Linear)
    ->ArgNames({"shape", "rows", "threads"})
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1, 8, 16}, {1, 0}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The drafter's two-span head over the demo lm_head (384 x 8192, K = 6): a 4,096-token span and
// the 128-token special tail. Args: rows, threads.
BENCHMARK_DEFINE_F(Exl3LinearShape, SpanHead)(benchmark::State& state) {
  const int64_t rows = state.range(1);
  const std::vector<exl3::ColumnSpan> spans = {{0, 4096}, {kVocab - 128, kVocab}};
  const auto views = *exl3::MakeSpanViews(*weight_.exl3(), spans);
  const int64_t columns = exl3::PackedSize(views);
  const std::vector<float> x = testing::RandomRows(rows, kHidden, 3);
  std::vector<float> packed(rows * columns);
  const cpu::Context ctx{pool_.get()};
  for (auto _ : state) {
    if (!cpu::Exl3SpanLinear(ctx, x.data(), kHidden, rows, views, packed.data(), columns).ok()) {
      state.SkipWithError("Exl3SpanLinear");
    }
    benchmark::DoNotOptimize(packed.data());
  }
  state.counters["y_hash"] = OutputHash(packed);
}
BENCHMARK_REGISTER_F(Exl3LinearShape, SpanHead)
    ->ArgNames({"shape", "rows", "threads"})
    ->ArgsProduct({{4}, {1, 16}, {1, 0}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The drafter's dense (bf16-loaded, fp32) linears at the same shapes. Args: shape (0: 384 x 384,
// 1: 384 x 1024), rows, threads.
void BM_DenseLinear(benchmark::State& state) {
  const int64_t k = kHidden, n = state.range(0) == 0 ? kHidden : kMlp, rows = state.range(1);
  target::testing::RandomWeights r(4);
  const cpu::LinearWeight w = *cpu::LinearWeight::Dense(n, k, r.Normal(n * k, 0.05f));
  const std::vector<float> x = testing::RandomRows(rows, k, 3);
  std::vector<float> y(rows * n);
  const int threads = PoolSize(state.range(2));
  std::unique_ptr<cpu::ThreadPool> pool;
  if (threads > 1) pool = std::make_unique<cpu::ThreadPool>(threads);
  const cpu::Context ctx{pool.get()};
  for (auto _ : state) {
    if (!cpu::Linear(ctx, x.data(), rows, w, y.data()).ok()) state.SkipWithError("Linear");
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["y_hash"] = OutputHash(y);
}
BENCHMARK(BM_DenseLinear)
    ->ArgNames({"shape", "rows", "threads"})
    ->ArgsProduct({{0, 1}, {1, 16}, {1, 0}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

target::TargetConfig DemoConfig() {
  target::TargetConfig c = target::testing::TinyQwen3Config();
  c.vocab_size = kVocab;
  c.hidden_size = kHidden;
  c.intermediate_size = kMlp;
  c.num_layers = kLayers;
  c.num_heads = kHeads;
  c.num_kv_heads = kKvHeads;
  c.head_dim = kHeadDim;
  c.rotary_dim = kHeadDim;
  c.layer_types.assign(kLayers, target::LayerType::kFullAttention);
  return c;
}

// The demo target's weights: random norms and embedding, every linear EXL3 (mul1).
std::unique_ptr<Checkpoint> WriteDemoLinears() {
  std::vector<testing::SyntheticLinear> specs;
  uint32_t seed = 10;
  auto add = [&](const std::string& prefix, int64_t k, int64_t n, int bits) {
    specs.push_back({.prefix = prefix,
                     .k = k,
                     .n = n,
                     .bits = bits,
                     .codebook = exl3::Codebook::kMul1,
                     .seed = ++seed});
  };
  for (int64_t i = 0; i < kLayers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    add(p + "q_proj", kHidden, kHeads * kHeadDim, 4);
    add(p + "k_proj", kHidden, kKvHeads * kHeadDim, 4);
    add(p + "v_proj", kHidden, kKvHeads * kHeadDim, 4);
    add(p + "o_proj", kHeads * kHeadDim, kHidden, 4);
    add(p + "gate_proj", kHidden, kMlp, 4);
    add(p + "up_proj", kHidden, kMlp, 4);
    add(p + "down_proj", kMlp, kHidden, 4);
  }
  add("lm_head", kHidden, kVocab, 6);
  return WriteLinears("exl3_demo_target", specs);
}

class DemoTargetForward : public benchmark::Fixture {
 public:
  void SetUp(const benchmark::State& state) override {
    checkpoint_ = WriteDemoLinears();
    const target::TargetConfig c = DemoConfig();
    auto linear = [&](const std::string& name) {
      return cpu::LinearWeight::Exl3(*exl3::Weight::Load(*checkpoint_, name));
    };
    target::testing::RandomWeights r(1);
    target::Qwen3Weights w;
    const std::vector<float> table = r.Normal(kVocab * kHidden, 1.0f);
    w.embedding = *cpu::EmbeddingTable::FromRaw(cpu::EmbeddingDtype::kF32, kVocab, kHidden,
                                                table.data(), table.size() * sizeof(float));
    for (int64_t i = 0; i < kLayers; ++i) {
      const std::string p = "layers." + std::to_string(i) + ".";
      target::Qwen3LayerWeights layer;
      layer.input_norm = r.Normal(kHidden, 0.1f, 1.0f);
      layer.post_norm = r.Normal(kHidden, 0.1f, 1.0f);
      layer.attention.q_proj = linear(p + "q_proj");
      layer.attention.k_proj = linear(p + "k_proj");
      layer.attention.v_proj = linear(p + "v_proj");
      layer.attention.o_proj = linear(p + "o_proj");
      layer.attention.q_norm = r.Normal(kHeadDim, 0.1f, 1.0f);
      layer.attention.k_norm = r.Normal(kHeadDim, 0.1f, 1.0f);
      layer.mlp.gate_proj = linear(p + "gate_proj");
      layer.mlp.up_proj = linear(p + "up_proj");
      layer.mlp.down_proj = linear(p + "down_proj");
      w.layers.push_back(std::move(layer));
    }
    w.final_norm = r.Normal(kHidden, 0.1f, 1.0f);
    w.lm_head = linear("lm_head");

    const int threads = PoolSize(state.range(1));
    if (threads > 1) pool_ = std::make_unique<cpu::ThreadPool>(threads);
    backend_ = cpu::NewCpuBackend(pool_.get());
    target::TargetOptions options;
    options.backend = backend_.get();
    options.context = 256;
    auto model = target::Qwen3Model::Create(c, std::move(w), options);
    if (!model.ok()) return;
    model_ = *std::move(model);
    std::mt19937 rng(2);
    std::uniform_int_distribution<int32_t> token(0, kVocab - 1);
    std::vector<int32_t> prompt(kPromptTokens);
    for (int32_t& t : prompt) t = token(rng);
    state_ = *model_->NewSequence();
    target::Prefill(*model_, *state_, prompt, kPromptTokens, {}).IgnoreError();
    window_.resize(state.range(0));
    for (int32_t& t : window_) t = token(rng);
  }
  void TearDown(const benchmark::State&) override {
    state_.reset();
    model_.reset();
    backend_.reset();
    pool_.reset();
    checkpoint_.reset();
  }

 protected:
  std::unique_ptr<Checkpoint> checkpoint_;
  std::unique_ptr<cpu::ThreadPool> pool_;
  std::unique_ptr<backend::Backend> backend_;
  std::unique_ptr<target::Qwen3Model> model_;
  std::unique_ptr<target::SequenceState> state_;
  std::vector<int32_t> window_;
};

// Args: rows (1: a plain decoding step; 16: a verify window, logits of every row), threads.
BENCHMARK_DEFINE_F(DemoTargetForward, Forward)(benchmark::State& state) {
  if (model_ == nullptr) {
    state.SkipWithError("model creation failed");
    return;
  }
  target::ForwardRequest request;
  request.tokens = window_;
  target::ForwardResult result;
  for (auto _ : state) {
    if (!model_->Forward(*state_, request, &result).ok()) state.SkipWithError("Forward failed");
    model_->Commit(*state_, 0).IgnoreError();
    benchmark::DoNotOptimize(result.logits.data());
  }
  state.counters["logits_hash"] = OutputHash(result.logits);
}
BENCHMARK_REGISTER_F(DemoTargetForward, Forward)
    ->ArgNames({"rows", "threads"})
    ->ArgsProduct({{1, 16}, {1, 0}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace twinspan

BENCHMARK_MAIN();
