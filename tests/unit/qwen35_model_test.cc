// Exactness properties of the Qwen3.5 family on a random tiny model: a verify window equals serial
// single-row decoding bit for bit, and committing any kept prefix leaves the state serial decoding
// would (so decoding continues identically).
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/config/target_config.h"
#include "gtest/gtest.h"
#include "kernels/cpu/parallel.h"
#include "services/target/qwen3_5_model.h"
#include "tests/unit/target_properties.h"
#include "tests/unit/target_random_qwen35.h"

namespace twinspan::target {
namespace {

constexpr int64_t kVocab = testing::kTinyQwen35Vocab;
constexpr int64_t kHidden = testing::kTinyQwen35Hidden;

TargetConfig TinyConfig() { return testing::TinyQwen35Config(); }
Qwen35Weights RandomWeights(const TargetConfig& c, unsigned seed) {
  return testing::RandomQwen35Weights(c, seed);
}

struct Rows {
  std::vector<float> logits;  // [rows, vocab]
  std::vector<float> taps;    // [rows, 2, hidden]
};

class Qwen35ExactnessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = TinyConfig();
    const Qwen35Weights weights = RandomWeights(config_, 7);
    TargetOptions serial_options;  // Single-threaded, bf16 KV: the serving default.
    serial_options.context = 96;
    auto serial = Qwen35Model::Create(config_, weights, serial_options);
    ASSERT_TRUE(serial.ok()) << serial.status();
    serial_ = std::move(*serial);
    TargetOptions verify_options = serial_options;
    verify_options.pool = &pool_;  // The thread count must not change any bit either.
    auto verify = Qwen35Model::Create(config_, weights, verify_options);
    ASSERT_TRUE(verify.ok()) << verify.status();
    verify_ = std::move(*verify);
    std::mt19937 gen(11);
    for (int i = 0; i < 60; ++i) tokens_.push_back(static_cast<int32_t>(gen() % kVocab));
  }

  // Runs `tokens` as one forward of `model` on `state` and commits `keep` of them.
  static Rows Run(const TargetModel& model, SequenceState& state, std::vector<int32_t> tokens,
                  int64_t keep) {
    ForwardRequest request;
    request.tokens = tokens;
    request.tap_layer_ids = {1, 2};  // A GDN layer and the attention layer.
    ForwardResult result;
    absl::Status status = model.Forward(state, request, &result);
    EXPECT_TRUE(status.ok()) << status;
    status = model.Commit(state, keep);
    EXPECT_TRUE(status.ok()) << status;
    return Rows{result.logits, result.taps};
  }

  // Serial decoding: one forward and commit per token.
  static Rows Serial(const TargetModel& model, SequenceState& state,
                     const std::vector<int32_t>& tokens) {
    Rows all;
    for (int32_t t : tokens) {
      Rows one = Run(model, state, {t}, 1);
      all.logits.insert(all.logits.end(), one.logits.begin(), one.logits.end());
      all.taps.insert(all.taps.end(), one.taps.begin(), one.taps.end());
    }
    return all;
  }

  static void ExpectSameBits(const std::vector<float>& a, const std::vector<float>& b,
                             const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << what;
  }

  // A buffer of `model`'s backend, downloaded.
  static std::vector<float> Read(const TargetModel& model, const backend::Buffer& buffer) {
    std::vector<float> out(buffer.bytes() / sizeof(float));
    EXPECT_TRUE(model.backend().Download(out.data(), buffer, 0, buffer.bytes()).ok());
    return out;
  }

  // `a` of verify_ against `b` of serial_.
  void ExpectSameState(SequenceState& a, SequenceState& b) {
    ASSERT_EQ(a.length(), b.length());
    for (int64_t i = 0; i < a.num_layers(); ++i) {
      if (a.layer(i).recurrent == nullptr) continue;
      const RecurrentState& ra = *a.layer(i).recurrent;
      const RecurrentState& rb = *b.layer(i).recurrent;
      ExpectSameBits(Read(*verify_, ra.conv()), Read(*serial_, rb.conv()),
                     absl::StrCat("conv state of layer ", i));
      ExpectSameBits(Read(*verify_, ra.ssm()), Read(*serial_, rb.ssm()),
                     absl::StrCat("recurrent state of layer ", i));
    }
  }

  std::unique_ptr<SequenceState> NewSequence(const TargetModel& model) {
    auto state = model.NewSequence();
    EXPECT_TRUE(state.ok()) << state.status();
    return std::move(*state);
  }

  cpu::ThreadPool pool_{3};
  TargetConfig config_;
  std::unique_ptr<Qwen35Model> serial_;
  std::unique_ptr<Qwen35Model> verify_;
  std::vector<int32_t> tokens_;
};

TEST_F(Qwen35ExactnessTest, VerifyWindowEqualsSerialStepsForEveryWidth) {
  const std::vector<int32_t> prompt(tokens_.begin(), tokens_.begin() + 9);
  auto serial = NewSequence(*serial_);
  Run(*serial_, *serial, prompt, prompt.size());
  const std::vector<int32_t> window(tokens_.begin() + 9, tokens_.begin() + 9 + 16);
  const Rows want = Serial(*serial_, *serial, window);
  for (int64_t k = 1; k <= 16; ++k) {
    SCOPED_TRACE(absl::StrCat("window of ", k));
    auto state = NewSequence(*verify_);
    Run(*verify_, *state, prompt, prompt.size());
    const Rows got =
        Run(*verify_, *state, std::vector<int32_t>(window.begin(), window.begin() + k), k);
    ExpectSameBits(got.logits,
                   std::vector<float>(want.logits.begin(), want.logits.begin() + k * kVocab),
                   "logits");
    ExpectSameBits(got.taps,
                   std::vector<float>(want.taps.begin(), want.taps.begin() + k * 2 * kHidden),
                   "taps");
  }
}

// Every kept prefix of every window leaves the serial state, and decoding then continues alike.
TEST_F(Qwen35ExactnessTest, CommitAnyPrefixThenContinueEqualsSerial) {
  const std::vector<int32_t> prompt(tokens_.begin(), tokens_.begin() + 7);
  for (int64_t k : {1, 2, 3, 5, 8, 16}) {
    for (int64_t keep : {int64_t{0}, int64_t{1}, k / 2, k - 1, k}) {
      if (keep < 0 || keep > k) continue;
      SCOPED_TRACE(absl::StrCat("window ", k, ", kept ", keep));
      const std::vector<int32_t> window(tokens_.begin() + 7, tokens_.begin() + 7 + k);
      // The bonus token after the kept rows, then two more rounds.
      const std::vector<int32_t> next(tokens_.begin() + 40, tokens_.begin() + 44);

      auto serial = NewSequence(*serial_);
      Run(*serial_, *serial, prompt, prompt.size());
      Serial(*serial_, *serial, std::vector<int32_t>(window.begin(), window.begin() + keep));

      auto verify = NewSequence(*verify_);
      Run(*verify_, *verify, prompt, prompt.size());
      Run(*verify_, *verify, window, keep);
      ExpectSameState(*verify, *serial);

      const Rows want = Serial(*serial_, *serial, next);
      Rows got = Run(*verify_, *verify, {next[0], next[1]}, 2);
      const Rows rest = Run(*verify_, *verify, {next[2], next[3]}, 2);
      got.logits.insert(got.logits.end(), rest.logits.begin(), rest.logits.end());
      got.taps.insert(got.taps.end(), rest.taps.begin(), rest.taps.end());
      ExpectSameBits(got.logits, want.logits, "logits after commit");
      ExpectSameBits(got.taps, want.taps, "taps after commit");
      ExpectSameState(*verify, *serial);
    }
  }
}

// The scaffold's shared properties, on this family, for both KV dtypes.
class Qwen35SharedPropertyTest : public ::testing::TestWithParam<cpu::KvDtype> {
 protected:
  std::unique_ptr<Qwen35Model> Model(cpu::ThreadPool* pool) {
    const TargetConfig config = TinyConfig();
    TargetOptions options;
    options.kv_dtype = GetParam();
    options.pool = pool;
    options.context = 96;
    auto model = Qwen35Model::Create(config, RandomWeights(config, 21), options);
    EXPECT_TRUE(model.ok()) << model.status();
    return model.ok() ? std::move(*model) : nullptr;
  }
};

TEST_P(Qwen35SharedPropertyTest, VerifyEqualsSerialStepsForEveryWindowUpTo16) {
  cpu::ThreadPool pool(3);
  auto model = Model(&pool);
  ASSERT_NE(model, nullptr);
  testing::ExpectVerifyEqualsSerial(*model, 16, 5);
}

TEST_P(Qwen35SharedPropertyTest, PrefillChunkingChangesNoBit) {
  auto model = Model(nullptr);
  ASSERT_NE(model, nullptr);
  testing::ExpectPrefillChunkingInvariant(*model, 23, 6);
}

TEST_P(Qwen35SharedPropertyTest, InterleavedSequencesEqualSoloRuns) {
  auto model = Model(nullptr);
  ASSERT_NE(model, nullptr);
  std::mt19937 rng(12);
  const auto p1 = testing::RandomTokens(rng, 9, kVocab);
  const auto p2 = testing::RandomTokens(rng, 5, kVocab);
  auto solo = testing::Prefilled(*model, p1, 9);
  auto a = model->NewSequence();
  auto b = model->NewSequence();
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < p1.size(); ++i) {  // Alternate rows of two sequences on one model.
    testing::Step(*model, **a, p1[i], {});
    if (i < p2.size()) testing::Step(*model, **b, p2[i], {});
  }
  const ForwardResult x = testing::Step(*model, *solo, 3, {1});
  const ForwardResult y = testing::Step(*model, **a, 3, {1});
  EXPECT_TRUE(testing::SameBits(x.logits.data(), y.logits.data(), x.logits.size()));
  EXPECT_TRUE(testing::SameBits(x.taps.data(), y.taps.data(), x.taps.size()));
}

INSTANTIATE_TEST_SUITE_P(KvDtypes, Qwen35SharedPropertyTest,
                         ::testing::Values(cpu::KvDtype::kF32, cpu::KvDtype::kBF16));

TEST(Qwen35ModelTest, CreateRejectsGdnWeightsThatDisagreeWithTheConfig) {
  const TargetConfig config = TinyConfig();
  TargetOptions options;
  {
    Qwen35Weights w = RandomWeights(config, 3);
    w.layers[1].gdn.in_proj_qkv =
        *cpu::LinearWeight::Dense(8, kHidden, std::vector<float>(8 * kHidden));
    auto model = Qwen35Model::Create(config, std::move(w), options);
    ASSERT_FALSE(model.ok());
    EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(model.status().message().find("layer 1: in_proj_qkv"), std::string::npos)
        << model.status();
  }
  {
    Qwen35Weights w = RandomWeights(config, 3);
    w.layers[3].gdn.conv.pop_back();
    auto model = Qwen35Model::Create(config, std::move(w), options);
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.status().message().find("layer 3: conv1d"), std::string::npos)
        << model.status();
  }
  {
    Qwen35Weights w = RandomWeights(config, 3);
    w.layers[2].attention.q_proj =  // Without the output gate half.
        *cpu::LinearWeight::Dense(64, kHidden, std::vector<float>(64 * kHidden));
    auto model = Qwen35Model::Create(config, std::move(w), options);
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.status().message().find("layer 2: q_proj"), std::string::npos)
        << model.status();
  }
}

TEST(Qwen35ModelTest, CommitOutsidePendingIsInvalidArgumentAndKeepsState) {
  const TargetConfig config = TinyConfig();
  auto model = Qwen35Model::Create(config, RandomWeights(config, 4), TargetOptions{});
  ASSERT_TRUE(model.ok());
  auto state = (*model)->NewSequence();
  ASSERT_TRUE(state.ok());
  const std::vector<int32_t> tokens = {1, 2, 3};
  ForwardRequest request;
  request.tokens = tokens;
  ForwardResult result;
  ASSERT_TRUE((*model)->Forward(**state, request, &result).ok());
  EXPECT_EQ((*model)->Commit(**state, 4).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*model)->Commit(**state, -1).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE((*model)->Commit(**state, 2).ok());
  EXPECT_EQ((*state)->length(), 2);
}

}  // namespace
}  // namespace twinspan::target
