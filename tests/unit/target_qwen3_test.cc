// The qwen3 family on random tiny models: the exactness contract (verify == serial, commit and
// continue == serial, chunking and threads change no bit) and its errors.
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/parallel.h"
#include "tests/unit/target_properties.h"
#include "tests/unit/target_random_model.h"

namespace twinspan::target {
namespace {

using testing::RandomQwen3Model;

TargetOptions Options(cpu::KvDtype dtype, cpu::ThreadPool* pool = nullptr, int64_t context = 256) {
  TargetOptions options;
  options.kv_dtype = dtype;
  options.pool = pool;
  options.context = context;
  return options;
}

class Qwen3PropertyTest : public ::testing::TestWithParam<cpu::KvDtype> {};

TEST_P(Qwen3PropertyTest, VerifyEqualsSerialStepsForEveryWindowUpTo16) {
  cpu::ThreadPool pool(2);
  auto model = RandomQwen3Model(Options(GetParam(), &pool), 7);
  ASSERT_NE(model, nullptr);
  testing::ExpectVerifyEqualsSerial(*model, 16, 11);
}

TEST_P(Qwen3PropertyTest, PrefillChunkingChangesNoBit) {
  auto model = RandomQwen3Model(Options(GetParam()), 8);
  ASSERT_NE(model, nullptr);
  testing::ExpectPrefillChunkingInvariant(*model, 150, 12);  // 150 keys cross a 128-key chunk.
}

TEST_P(Qwen3PropertyTest, ThreadCountChangesNoBit) {
  cpu::ThreadPool pool(3);
  auto single = RandomQwen3Model(Options(GetParam()), 9);
  auto threaded = RandomQwen3Model(Options(GetParam(), &pool), 9);
  std::mt19937 rng(13);
  const auto prompt = testing::RandomTokens(rng, 20, single->config().vocab_size);
  auto a = single->NewSequence();
  auto b = threaded->NewSequence();
  auto ra = Prefill(*single, **a, prompt, 7, {1});
  auto rb = Prefill(*threaded, **b, prompt, 7, {1});
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_TRUE(testing::SameBits(ra->logits.data(), rb->logits.data(), ra->logits.size()));
  EXPECT_TRUE(testing::SameBits(ra->taps.data(), rb->taps.data(), ra->taps.size()));
}

TEST_P(Qwen3PropertyTest, InterleavedSequencesEqualSoloRuns) {
  auto model = RandomQwen3Model(Options(GetParam()), 10);
  std::mt19937 rng(14);
  const auto p1 = testing::RandomTokens(rng, 9, model->config().vocab_size);
  const auto p2 = testing::RandomTokens(rng, 5, model->config().vocab_size);
  auto solo = testing::Prefilled(*model, p1, 9);
  auto s1 = model->NewSequence();
  auto s2 = model->NewSequence();
  ForwardResult r1;
  for (size_t i = 0; i < p1.size(); ++i) {
    r1 = testing::Step(*model, **s1, p1[i], {});
    if (i < p2.size()) testing::Step(*model, **s2, p2[i], {});
  }
  const auto last_solo = testing::Step(*model, *solo, 3, {});
  const auto last_mixed = testing::Step(*model, **s1, 3, {});
  EXPECT_TRUE(testing::SameBits(last_solo.logits.data(), last_mixed.logits.data(),
                                last_solo.logits.size()));
}

INSTANTIATE_TEST_SUITE_P(KvDtypes, Qwen3PropertyTest,
                         ::testing::Values(cpu::KvDtype::kF32, cpu::KvDtype::kBF16));

TEST(Qwen3ModelTest, ForwardPastTheContextIsResourceExhausted) {
  auto model = RandomQwen3Model(Options(cpu::KvDtype::kBF16, nullptr, 8), 1);
  auto state = model->NewSequence();
  ASSERT_TRUE(state.ok());
  const std::vector<int32_t> tokens(9, 1);
  ForwardRequest request;
  request.tokens = tokens;
  ForwardResult result;
  const absl::Status status = model->Forward(**state, request, &result);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("context is 8"), std::string::npos) << status;
  request.tokens = absl::MakeConstSpan(tokens.data(), 8);
  EXPECT_TRUE(model->Forward(**state, request, &result).ok());  // Exactly fits.
}

TEST(Qwen3ModelTest, ForwardWithPendingRowsIsFailedPrecondition) {
  auto model = RandomQwen3Model(Options(cpu::KvDtype::kF32), 2);
  auto state = model->NewSequence();
  const std::vector<int32_t> tokens = {1, 2};
  ForwardRequest request;
  request.tokens = tokens;
  ForwardResult result;
  ASSERT_TRUE(model->Forward(**state, request, &result).ok());
  EXPECT_EQ(model->Forward(**state, request, &result).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(model->Commit(**state, 3).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(model->Commit(**state, 0).ok());
  EXPECT_EQ((*state)->length(), 0);
}

TEST(Qwen3ModelTest, BadTokensAndTapIdsAreInvalidArgumentAndLeaveStateUsable) {
  auto model = RandomQwen3Model(Options(cpu::KvDtype::kF32), 3);
  auto state = model->NewSequence();
  const std::vector<int32_t> bad = {1, 96};
  ForwardRequest request;
  request.tokens = bad;
  ForwardResult result;
  EXPECT_EQ(model->Forward(**state, request, &result).code(), absl::StatusCode::kInvalidArgument);
  const std::vector<int32_t> good = {1, 2};
  request.tokens = good;
  request.tap_layer_ids = {3};  // Three layers: ids 0..2.
  EXPECT_EQ(model->Forward(**state, request, &result).code(), absl::StatusCode::kInvalidArgument);
  request.tap_layer_ids = {2};
  EXPECT_TRUE(model->Forward(**state, request, &result).ok());
  EXPECT_EQ((*state)->pending(), 2);
}

TEST(Qwen3ModelTest, CreateRejectsWeightsThatDisagreeWithTheConfig) {
  auto config = testing::TinyQwen3Config();
  auto weights = testing::RandomQwen3Weights(config, 4);
  weights.layers[1].attention.k_norm.pop_back();
  auto model = Qwen3Model::Create(config, std::move(weights), Options(cpu::KvDtype::kF32));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("layer 1: k_norm"), std::string::npos);
}

}  // namespace
}  // namespace twinspan::target
