// The target's prefix cache on the CPU backend, both families: a prefill resumed after a cached
// prefix equals a fresh one bit for bit (logits, taps, and the verifies after it), eviction under
// the byte bound keeps whole chains, a drafting stream resumes only blocks its drafter holds, and
// SaveBlock / LoadBlocks refuse what they cannot do.
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "tests/unit/target_prefix_properties.h"
#include "tests/unit/target_random_model.h"
#include "tests/unit/target_random_qwen35.h"

namespace twinspan::target {
namespace {

using testing::RandomTokens;

TargetOptions Options(backend::Backend* backend) {
  TargetOptions options;
  options.backend = backend;
  options.context = 320;
  return options;
}

class PrefixCacheTest : public ::testing::Test {
 protected:
  std::unique_ptr<TargetModel> Qwen3() { return testing::RandomQwen3Model(Options(be_.get()), 41); }
  std::unique_ptr<TargetModel> Qwen35() {
    const TargetConfig config = testing::TinyQwen35Config();
    auto model =
        Qwen35Model::Create(config, testing::RandomQwen35Weights(config, 42), Options(be_.get()));
    EXPECT_TRUE(model.ok()) << model.status();
    return model.ok() ? std::move(*model) : nullptr;
  }

  std::unique_ptr<backend::Backend> be_ = cpu::NewCpuBackend(nullptr);
};

TEST_F(PrefixCacheTest, ResumedEqualsFreshForQwen3) {
  auto model = Qwen3();
  ASSERT_NE(model, nullptr);
  testing::ExpectPrefixReuseExact(*model, 7);
}

TEST_F(PrefixCacheTest, ResumedEqualsFreshForQwen35) {
  auto model = Qwen35();
  ASSERT_NE(model, nullptr);
  testing::ExpectPrefixReuseExact(*model, 8);
}

TEST_F(PrefixCacheTest, TheByteBoundEvictsLeastRecentlyUsedLeavesAndKeepsChains) {
  auto model = Qwen35();
  ASSERT_NE(model, nullptr);
  std::mt19937 rng(9);
  auto probe = PrefixCache::Create(*model, PrefixCacheOptions{64, size_t{1} << 30});
  ASSERT_TRUE(probe.ok());
  const std::vector<int32_t> a = RandomTokens(rng, 200, model->config().vocab_size);
  ASSERT_EQ(testing::ExpectResumedEqualsFresh(*model, **probe, a, 64, rng), 0);
  const size_t block_bytes = (*probe)->stats().bytes / 3;
  // Room for two blocks: a's third block is the least recent leaf when it arrives.
  auto cache = PrefixCache::Create(*model, PrefixCacheOptions{64, 2 * block_bytes});
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ(testing::ExpectResumedEqualsFresh(*model, **cache, a, 64, rng), 0);
  EXPECT_EQ((*cache)->stats().blocks, 2);
  EXPECT_EQ((*cache)->stats().evicted_blocks, 1);
  EXPECT_LE((*cache)->stats().bytes, 2 * block_bytes);
  EXPECT_EQ(testing::ExpectResumedEqualsFresh(*model, **cache, a, 64, rng), 128);
  // A new prompt's block pushes out the least recent leaf (a's second block), never a's first.
  const std::vector<int32_t> b = RandomTokens(rng, 70, model->config().vocab_size);
  EXPECT_EQ(testing::ExpectResumedEqualsFresh(*model, **cache, b, 64, rng), 0);
  EXPECT_EQ(testing::ExpectResumedEqualsFresh(*model, **cache, a, 64, rng), 64);
}

// A drafting stream resumes only blocks marked as held by its drafter: a prefill marks nothing
// itself (the drafter has not answered yet), blocks of a restarted drafter's epoch or unmarked
// ones are prefilled again, and a mark covers the whole blocks of the prompt it names.
TEST_F(PrefixCacheTest, ADraftingStreamResumesOnlyWhatItsDrafterHolds) {
  auto model = Qwen3();
  ASSERT_NE(model, nullptr);
  std::mt19937 rng(12);
  auto cache = PrefixCache::Create(*model, PrefixCacheOptions{64, size_t{1} << 30});
  ASSERT_TRUE(cache.ok());
  const std::vector<int32_t> prompt = RandomTokens(rng, 200, model->config().vocab_size);
  auto prefill = [&](std::optional<uint64_t> epoch) -> int64_t {
    auto state = model->NewSequence();
    EXPECT_TRUE(state.ok());
    PrefillOptions options;
    options.prefix_cache = cache->get();
    options.prefix_drafter_epoch = epoch;
    absl::StatusOr<ForwardResult> result = Prefill(*model, **state, prompt, options);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? result->first_position : -1;
  };
  EXPECT_EQ(prefill(std::nullopt), 0);  // caches 3 blocks, held by no drafter
  EXPECT_EQ(prefill(7), 0);             // the drafter of epoch 7 holds none of them
  EXPECT_EQ(prefill(7), 0);             // nor after its own prefill: it has not answered
  (*cache)->Mark(prompt, 7);            // it answered that stream
  EXPECT_EQ(prefill(7), 192);
  EXPECT_EQ(prefill(8), 0);  // a drafter that restarted holds none
  EXPECT_EQ(prefill(std::nullopt), 192);
  (*cache)->Mark(absl::MakeConstSpan(prompt).subspan(0, 130), 8);  // two whole blocks
  EXPECT_EQ(prefill(8), 128);
  EXPECT_EQ(prefill(7), 0);  // block 0 is epoch 8's now
  (*cache)->Mark(prompt, 8);
  EXPECT_EQ(prefill(8), 192);
  (*cache)->Unmark(prompt);  // the drafter lost them
  EXPECT_EQ(prefill(8), 0);
  EXPECT_EQ(prefill(std::nullopt), 192);
  EXPECT_EQ((*cache)->stats().blocks, 3);  // marks and resumes cached nothing twice
}

TEST_F(PrefixCacheTest, SaveAndLoadRefuseWhatTheyCannotDo) {
  auto qwen3 = Qwen3();
  auto qwen35 = Qwen35();
  ASSERT_NE(qwen3, nullptr);
  ASSERT_NE(qwen35, nullptr);
  std::mt19937 rng(10);
  const auto prompt = RandomTokens(rng, 100, qwen35->config().vocab_size);
  auto hybrid = testing::Prefilled(*qwen35, prompt, 100);
  auto dense = testing::Prefilled(*qwen3, prompt, 100);
  // A recurrent family keeps only the state after its last row.
  absl::StatusOr<std::unique_ptr<PrefixBlock>> early = qwen35->SaveBlock(*hybrid, 0, 64);
  EXPECT_TRUE(absl::IsInvalidArgument(early.status())) << early.status();
  EXPECT_NE(early.status().message().find("after position 99"), std::string::npos);
  auto late = qwen35->SaveBlock(*hybrid, 36, 64);
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_TRUE(qwen3->SaveBlock(*dense, 0, 64).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(qwen3->SaveBlock(*dense, 64, 64).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(qwen3->SaveBlock(*dense, 0, 0).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(qwen3->SaveBlock(*hybrid, 0, 64).status()));  // Not its state.
  // Loading: an empty state of the same model, blocks from position 0 in order.
  auto empty = qwen35->NewSequence();
  ASSERT_TRUE(empty.ok());
  const PrefixBlock* not_from_zero[] = {late->get()};
  EXPECT_TRUE(absl::IsInvalidArgument(qwen35->LoadBlocks(**empty, not_from_zero)));
  EXPECT_TRUE(absl::IsInvalidArgument(qwen35->LoadBlocks(**empty, {})));
  EXPECT_TRUE(absl::IsFailedPrecondition(qwen35->LoadBlocks(*hybrid, not_from_zero)));
  auto dense_block = qwen3->SaveBlock(*dense, 0, 64);
  ASSERT_TRUE(dense_block.ok());
  const PrefixBlock* foreign[] = {dense_block->get()};
  EXPECT_TRUE(absl::IsInvalidArgument(qwen35->LoadBlocks(**empty, foreign)));
  EXPECT_EQ((*empty)->length(), 0);
  // A block of a state with rows pending is refused: they are not committed yet.
  ForwardRequest request;
  const int32_t token = 1;
  request.tokens = absl::MakeConstSpan(&token, 1);
  ForwardResult result;
  ASSERT_TRUE(qwen3->Forward(*dense, request, &result).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(qwen3->SaveBlock(*dense, 0, 64).status()));
  // A prefill through a cache needs an empty state.
  auto cache = PrefixCache::Create(*qwen3, PrefixCacheOptions{64, 1 << 20});
  ASSERT_TRUE(cache.ok());
  PrefillOptions options;
  options.prefix_cache = cache->get();
  EXPECT_TRUE(absl::IsFailedPrecondition(Prefill(*qwen3, *hybrid, prompt, options).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(PrefixCache::Create(*qwen3, {100, 1 << 20}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(PrefixCache::Create(*qwen3, {0, 1 << 20}).status()));
}

}  // namespace
}  // namespace twinspan::target
