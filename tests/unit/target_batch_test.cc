// TargetModel::ForwardBatch on random tiny models of both families, with dense and EXL3 weights:
// one forward over several sequences' windows equals each sequence's own Forward bit for bit, on
// a backend the test makes; and the batch's errors run nothing.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/exl3/weight.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/parallel.h"
#include "tests/unit/formats_exl3_fixture.h"
#include "tests/unit/target_properties.h"
#include "tests/unit/target_random_model.h"
#include "tests/unit/target_random_qwen35.h"

namespace twinspan::target {
namespace {

TargetOptions OnBackend(backend::Backend* be, cpu::KvDtype dtype, int64_t context = 256) {
  TargetOptions options;
  options.backend = be;
  options.kv_dtype = dtype;
  options.context = context;
  return options;
}

// Qwen3 with hidden 128 so q_proj, o_proj, the MLP and the head can be EXL3 (whole 128-column
// blocks); k_proj / v_proj (64 outputs), the norms and the embedding stay dense.
TargetConfig Exl3Qwen3Config() {
  TargetConfig c = testing::TinyQwen3Config();
  c.vocab_size = 256;
  c.hidden_size = 128;
  c.intermediate_size = 256;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 32;
  c.rotary_dim = 32;
  c.layer_types.assign(2, LayerType::kFullAttention);
  return c;
}

class Exl3Linears {
 public:
  // One synthetic EXL3 linear per name, of every codebook and several bit widths.
  explicit Exl3Linears(const TargetConfig& c) {
    struct Shape {
      std::string name;
      int64_t k, n;
    };
    std::vector<Shape> shapes = {{"lm_head", c.hidden_size, c.vocab_size}};
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const std::string l = "l" + std::to_string(i) + ".";
      shapes.push_back({l + "q_proj", c.hidden_size, c.num_heads * c.head_dim});
      shapes.push_back({l + "o_proj", c.num_heads * c.head_dim, c.hidden_size});
      shapes.push_back({l + "gate_proj", c.hidden_size, c.intermediate_size});
      shapes.push_back({l + "up_proj", c.hidden_size, c.intermediate_size});
      shapes.push_back({l + "down_proj", c.intermediate_size, c.hidden_size});
    }
    const exl3::Codebook codebooks[] = {exl3::Codebook::k3Inst, exl3::Codebook::kMcg,
                                        exl3::Codebook::kMul1};
    std::vector<OwnedTensor> tensors;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const auto t = twinspan::testing::SyntheticTensors({.prefix = shapes[i].name,
                                                          .k = shapes[i].k,
                                                          .n = shapes[i].n,
                                                          .bits = 2 + static_cast<int>(i % 4),
                                                          .codebook = codebooks[i % 3],
                                                          .seed = static_cast<uint32_t>(100 + i)});
      tensors.insert(tensors.end(), t.begin(), t.end());
    }
    checkpoint_ = twinspan::testing::OpenTensors("target_batch_exl3.safetensors", tensors);
  }
  cpu::LinearWeight Get(const std::string& name) const {
    auto w = exl3::Weight::Load(*checkpoint_, name);
    EXPECT_TRUE(w.ok()) << w.status();
    return cpu::LinearWeight::Exl3(*std::move(w));
  }

 private:
  std::unique_ptr<Checkpoint> checkpoint_;  // The weights view its memory map.
};

class TargetBatchTest : public ::testing::TestWithParam<cpu::KvDtype> {
 protected:
  cpu::ThreadPool pool_{3};
  std::unique_ptr<backend::Backend> be_ = cpu::NewCpuBackend(&pool_);
};

TEST_P(TargetBatchTest, Qwen3DenseBatchEqualsEachSequencesOwnForward) {
  auto model = testing::RandomQwen3Model(OnBackend(be_.get(), GetParam()), 31);
  ASSERT_NE(model, nullptr);
  testing::ExpectBatchEqualsSolo(*model, 41);
}

TEST_P(TargetBatchTest, Qwen3WithExl3LinearsBatchEqualsEachSequencesOwnForward) {
  const TargetConfig config = Exl3Qwen3Config();
  const Exl3Linears exl3(config);
  Qwen3Weights weights = testing::RandomQwen3Weights(config, 32);
  weights.lm_head = exl3.Get("lm_head");
  for (int64_t i = 0; i < config.num_layers; ++i) {
    const std::string l = "l" + std::to_string(i) + ".";
    weights.layers[i].attention.q_proj = exl3.Get(l + "q_proj");
    weights.layers[i].attention.o_proj = exl3.Get(l + "o_proj");
    weights.layers[i].mlp.gate_proj = exl3.Get(l + "gate_proj");
    weights.layers[i].mlp.up_proj = exl3.Get(l + "up_proj");
    weights.layers[i].mlp.down_proj = exl3.Get(l + "down_proj");
  }
  auto model = Qwen3Model::Create(config, std::move(weights), OnBackend(be_.get(), GetParam()));
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE(cpu::CpuLinearWeight((*model)->lm_head())->is_exl3());
  testing::ExpectBatchEqualsSolo(**model, 42);
}

TEST_P(TargetBatchTest, Qwen35BatchEqualsEachSequencesOwnForward) {
  const TargetConfig config = testing::TinyQwen35Config();
  auto model = Qwen35Model::Create(config, testing::RandomQwen35Weights(config, 33),
                                   OnBackend(be_.get(), GetParam()));
  ASSERT_TRUE(model.ok()) << model.status();
  testing::ExpectBatchEqualsSolo(**model, 43);
}

INSTANTIATE_TEST_SUITE_P(KvDtypes, TargetBatchTest,
                         ::testing::Values(cpu::KvDtype::kF32, cpu::KvDtype::kBF16));

class TargetBatchErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = testing::RandomQwen3Model(OnBackend(be_.get(), cpu::KvDtype::kF32), 34);
    ASSERT_NE(model_, nullptr);
    for (auto& state : states_) state = *model_->NewSequence();
  }

  std::unique_ptr<backend::Backend> be_ = cpu::NewCpuBackend(nullptr);
  std::unique_ptr<Qwen3Model> model_;
  std::unique_ptr<SequenceState> states_[2];
  const std::vector<int32_t> good_ = {1, 2, 3};
};

TEST_F(TargetBatchErrorTest, ABadEntryOrARepeatedStateRunsNothing) {
  const std::vector<int32_t> bad = {1, 96};  // The vocabulary is 96.
  ForwardRequest ok_request, bad_request;
  ok_request.tokens = good_;
  bad_request.tokens = bad;
  ForwardResult r0, r1;
  const std::vector<SequenceForward> with_bad = {{states_[0].get(), &ok_request, &r0},
                                                 {states_[1].get(), &bad_request, &r1}};
  const absl::Status status = model_->ForwardBatch(with_bad);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("batch entry 1: token id 96"), std::string::npos) << status;
  EXPECT_EQ(states_[0]->pending(), 0);
  const std::vector<SequenceForward> twice = {{states_[0].get(), &ok_request, &r0},
                                              {states_[0].get(), &ok_request, &r1}};
  EXPECT_EQ(model_->ForwardBatch(twice).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(states_[0]->pending(), 0);
  const std::vector<SequenceForward> null_result = {{states_[0].get(), &ok_request, nullptr}};
  EXPECT_EQ(model_->ForwardBatch(null_result).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(model_->ForwardBatch({}).ok());
  EXPECT_TRUE(model_->ForwardBatch({with_bad[0]}).ok());
  EXPECT_EQ(states_[0]->pending(), 3);
  const absl::Status pending = model_->ForwardBatch({with_bad[0]});
  EXPECT_EQ(pending.code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(TargetBatchErrorTest, AStateOfAnotherModelIsInvalidArgument) {
  auto other = testing::RandomQwen3Model(OnBackend(be_.get(), cpu::KvDtype::kF32), 35);
  ASSERT_NE(other, nullptr);
  ForwardRequest request;
  request.tokens = good_;
  ForwardResult result;
  const absl::Status status = other->Forward(*states_[0], request, &result);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("another model"), std::string::npos) << status;
  EXPECT_EQ(other->Commit(*states_[0], 0).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(TargetBatchErrorTest, LogitsOutKeepsTheLogitsInTheBackend) {
  const int64_t vocab = model_->config().vocab_size;
  ForwardRequest request;
  request.tokens = good_;
  ForwardResult host;
  ASSERT_TRUE(model_->Forward(*states_[0], request, &host).ok());
  auto small = be_->AllocateFloats(3 * vocab - 1);
  auto logits = be_->AllocateFloats(3 * vocab);
  ASSERT_TRUE(small.ok() && logits.ok());
  request.logits_out = small->get();
  ForwardResult kept;
  EXPECT_EQ(model_->Forward(*states_[1], request, &kept).code(),
            absl::StatusCode::kInvalidArgument);
  request.logits_out = logits->get();
  ASSERT_TRUE(model_->Forward(*states_[1], request, &kept).ok());
  EXPECT_TRUE(kept.logits.empty());
  EXPECT_EQ(kept.logit_rows, 3);
  std::vector<float> downloaded(3 * vocab);
  ASSERT_TRUE(be_->Download(downloaded.data(), **logits, 0, (*logits)->bytes()).ok());
  EXPECT_TRUE(testing::SameBits(downloaded.data(), host.logits.data(), downloaded.size()));
}

// Four threads decoding their own sequences on one model at once (each call takes the model's
// lock) get the logits one thread gets; their states are freed on their own threads.
TEST(TargetModelThreadsTest, ConcurrentCallersOnOneModelEqualOneCaller) {
  cpu::ThreadPool pool(2);
  auto be = cpu::NewCpuBackend(&pool);
  auto model = testing::RandomQwen3Model(OnBackend(be.get(), cpu::KvDtype::kBF16), 36);
  ASSERT_NE(model, nullptr);
  auto decode = [&](uint32_t seed) {
    std::mt19937 rng(seed);
    const auto prompt = testing::RandomTokens(rng, 5 + seed % 7, model->config().vocab_size);
    auto state = testing::Prefilled(*model, prompt, 3);
    std::vector<float> logits;
    for (int step = 0; step < 12; ++step) {
      const ForwardResult r =
          testing::Step(*model, *state, static_cast<int32_t>(step * 7 % 96), {1});
      logits.insert(logits.end(), r.logits.begin(), r.logits.end());
    }
    return logits;
  };
  std::vector<std::vector<float>> alone, together(4);
  for (uint32_t t = 0; t < 4; ++t) alone.push_back(decode(t));
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) threads.emplace_back([&, t] { together[t] = decode(t); });
  for (std::thread& thread : threads) thread.join();
  for (uint32_t t = 0; t < 4; ++t) {
    ASSERT_EQ(together[t].size(), alone[t].size());
    EXPECT_TRUE(testing::SameBits(together[t].data(), alone[t].data(), alone[t].size()))
        << "thread " << t;
  }
}

TEST(TargetOptionsTest, APoolBesideABackendIsInvalidArgument) {
  cpu::ThreadPool pool(2);
  auto be = cpu::NewCpuBackend(&pool);
  TargetOptions options = OnBackend(be.get(), cpu::KvDtype::kF32);
  options.pool = &pool;
  const absl::Status status = options.Validate();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("TargetOptions.pool"), std::string::npos) << status;
}

}  // namespace
}  // namespace twinspan::target
