// The prefix cache's exactness property, shared by the CPU test and the GPU test: a prefill that
// resumes after a cached prefix gives the logits and taps of a fresh prefill bit for bit, and so
// does every verify and commit after it.
#ifndef TWINSPAN_TESTS_UNIT_TARGET_PREFIX_PROPERTIES_H_
#define TWINSPAN_TESTS_UNIT_TARGET_PREFIX_PROPERTIES_H_

#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "services/target/prefix_cache.h"
#include "services/target/target_model.h"
#include "tests/unit/target_properties.h"

namespace twinspan::target::testing {

// Prefills `prompt` fresh (no cache, `chunk` rows a forward) and through `cache`, then runs the
// same verify window and commit on both: every logit and tap of the rows the cached prefill ran
// equals the fresh one's, bit for bit. Returns the rows the cached prefill resumed.
inline int64_t ExpectResumedEqualsFresh(const TargetModel& model, PrefixCache& cache,
                                        const std::vector<int32_t>& prompt, int64_t chunk,
                                        std::mt19937& rng) {
  const int64_t vocab = model.config().vocab_size, hidden = model.config().hidden_size;
  const std::vector<int64_t> taps = {0, model.config().num_layers - 1};
  const int64_t width = static_cast<int64_t>(taps.size()) * hidden;
  auto fresh_state = model.NewSequence();
  auto cached_state = model.NewSequence();
  EXPECT_TRUE(fresh_state.ok() && cached_state.ok());
  if (!fresh_state.ok() || !cached_state.ok()) return -1;
  absl::StatusOr<ForwardResult> fresh = Prefill(model, **fresh_state, prompt, chunk, taps);
  PrefillOptions options;
  options.chunk_rows = chunk;
  options.tap_layer_ids = taps;
  options.prefix_cache = &cache;
  absl::StatusOr<ForwardResult> cached = Prefill(model, **cached_state, prompt, options);
  EXPECT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_TRUE(cached.ok()) << cached.status();
  if (!fresh.ok() || !cached.ok()) return -1;
  const int64_t resumed = cached->first_position;
  EXPECT_EQ(cached->rows, static_cast<int64_t>(prompt.size()) - resumed);
  EXPECT_EQ((*cached_state)->length(), (*fresh_state)->length());
  EXPECT_EQ(cached->logits.size(), static_cast<size_t>(vocab));
  EXPECT_TRUE(SameBits(cached->logits.data(), fresh->logits.data(), vocab)) << "last logits";
  EXPECT_EQ(cached->taps.size(), static_cast<size_t>(cached->rows * width));
  EXPECT_TRUE(
      SameBits(cached->taps.data(), fresh->taps.data() + resumed * width, cached->taps.size()))
      << "taps of the rows after the resumed " << resumed;
  // The states decode alike: a verify window, a partial commit, one more step.
  const std::vector<int32_t> window = RandomTokens(rng, 5, vocab);
  ForwardRequest request;
  request.tokens = window;
  request.tap_layer_ids = taps;
  ForwardResult a, b;
  EXPECT_TRUE(model.Forward(**fresh_state, request, &a).ok());
  EXPECT_TRUE(model.Forward(**cached_state, request, &b).ok());
  ExpectSameResult(b, a);
  EXPECT_TRUE(model.Commit(**fresh_state, 3).ok());
  EXPECT_TRUE(model.Commit(**cached_state, 3).ok());
  const int32_t next = RandomTokens(rng, 1, vocab)[0];
  ExpectSameResult(Step(model, **cached_state, next, taps), Step(model, **fresh_state, next, taps));
  return resumed;
}

// Prompts that share 0, part of, all of and more than a cached prompt's blocks (64 tokens each),
// prefilled in chunks that do and do not divide a block: each resumes at its longest cached
// whole-block prefix that leaves a token to run, and equals a fresh prefill.
inline void ExpectPrefixReuseExact(const TargetModel& model, uint32_t seed) {
  const int64_t vocab = model.config().vocab_size;
  std::mt19937 rng(seed);
  auto cache = PrefixCache::Create(model, PrefixCacheOptions{64, size_t{1} << 30});
  ASSERT_TRUE(cache.ok()) << cache.status();
  const std::vector<int32_t> a = RandomTokens(rng, 200, vocab);
  auto with = [&](int64_t keep, int64_t extra) {
    std::vector<int32_t> p(a.begin(), a.begin() + keep);
    const std::vector<int32_t> tail = RandomTokens(rng, extra, vocab);
    p.insert(p.end(), tail.begin(), tail.end());
    return p;
  };
  EXPECT_EQ(ExpectResumedEqualsFresh(model, **cache, a, 256, rng), 0);  // Caches 3 blocks.
  EXPECT_EQ((*cache)->stats().blocks, 3);
  EXPECT_EQ(ExpectResumedEqualsFresh(model, **cache, with(150, 60), 256, rng), 128);
  EXPECT_EQ(ExpectResumedEqualsFresh(model, **cache, with(100, 3), 48, rng), 64);
  EXPECT_EQ(ExpectResumedEqualsFresh(model, **cache, a, 256, rng), 192);  // One token left to run.
  EXPECT_EQ(ExpectResumedEqualsFresh(model, **cache, with(192, 1), 100, rng), 192);
  EXPECT_EQ(ExpectResumedEqualsFresh(model, **cache, with(200, 90), 256, rng), 192);
  EXPECT_EQ(ExpectResumedEqualsFresh(model, **cache, with(0, 70), 256, rng), 0);
  const PrefixCacheStats stats = (*cache)->stats();
  EXPECT_EQ(stats.lookups, 7);
  EXPECT_EQ(stats.hits, 5);
  EXPECT_EQ(stats.tokens_reused, 128 + 64 + 192 + 192 + 192);
  // a and its 290-token extension (4 blocks), the fork after 128 tokens (1) and the unrelated
  // 70-token prompt (1).
  EXPECT_EQ(stats.blocks, 4 + 1 + 1);
  EXPECT_GT(stats.bytes, 0u);
}

}  // namespace twinspan::target::testing

#endif  // TWINSPAN_TESTS_UNIT_TARGET_PREFIX_PROPERTIES_H_
