// Exactness properties any TargetModel must have, as gtest checks a family's test calls with its
// own (random tiny) model: verify == serial steps bit for bit, commit-and-continue == serial
// decoding, prefill chunking never changes a bit, and a batched forward equals each sequence's
// own forward.
#ifndef TWINSPAN_TESTS_UNIT_TARGET_PROPERTIES_H_
#define TWINSPAN_TESTS_UNIT_TARGET_PROPERTIES_H_

#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "services/target/target_model.h"

namespace twinspan::target::testing {

inline bool SameBits(const float* a, const float* b, size_t n) {
  return n == 0 || std::memcmp(a, b, n * sizeof(float)) == 0;  // Empty vectors' data may be null.
}

inline std::vector<int32_t> RandomTokens(std::mt19937& rng, int64_t n, int64_t vocab) {
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> tokens(n);
  for (int32_t& t : tokens) t = dist(rng);
  return tokens;
}

// A fresh sequence with `prompt` prefilled in chunks of `chunk` rows.
inline std::unique_ptr<SequenceState> Prefilled(const TargetModel& model,
                                                const std::vector<int32_t>& prompt, int64_t chunk) {
  auto state = model.NewSequence();
  EXPECT_TRUE(state.ok()) << state.status();
  auto result = Prefill(model, **state, prompt, chunk, {});
  EXPECT_TRUE(result.ok()) << result.status();
  return std::move(*state);
}

// One single-row step (forward + commit): its logits and taps.
inline ForwardResult Step(const TargetModel& model, SequenceState& state, int32_t token,
                          const std::vector<int64_t>& taps) {
  ForwardRequest request;
  request.tokens = absl::MakeConstSpan(&token, 1);
  request.tap_layer_ids = taps;
  ForwardResult result;
  absl::Status status = model.Forward(state, request, &result);
  EXPECT_TRUE(status.ok()) << status;
  status = model.Commit(state, 1);
  EXPECT_TRUE(status.ok()) << status;
  return result;
}

// For k = 1..max_k: verify([pending, d1..dk]) gives the logits and taps of k + 1 serial steps bit
// for bit; after Commit(n) for a random n, the next verify equals serial decoding of the kept
// tokens followed by serial steps.
inline void ExpectVerifyEqualsSerial(const TargetModel& model, int max_k, uint32_t seed) {
  const int64_t vocab = model.config().vocab_size;
  const int64_t hidden = model.config().hidden_size;
  const std::vector<int64_t> taps = {0, model.config().num_layers - 1};
  std::mt19937 rng(seed);
  for (int k = 1; k <= max_k; ++k) {
    SCOPED_TRACE(::testing::Message() << "k = " << k);
    const auto prompt = RandomTokens(rng, 3 + k % 5, vocab);
    auto verified = Prefilled(model, prompt, 4);
    auto serial = Prefilled(model, prompt, 1);
    const auto window = RandomTokens(rng, k + 1, vocab);
    ForwardRequest request;
    request.tokens = window;
    request.tap_layer_ids = taps;
    ForwardResult batch;
    ASSERT_TRUE(model.Forward(*verified, request, &batch).ok());
    ASSERT_EQ(batch.logit_rows, k + 1);
    for (int i = 0; i <= k; ++i) {
      const ForwardResult one = Step(model, *serial, window[i], taps);
      EXPECT_TRUE(SameBits(one.logits.data(), &batch.logits[i * vocab], vocab)) << "row " << i;
      EXPECT_TRUE(
          SameBits(one.taps.data(), &batch.taps[i * taps.size() * hidden], taps.size() * hidden))
          << "taps of row " << i;
    }
    // Accept a random prefix (the pending row is always kept) and continue.
    const int64_t keep = std::uniform_int_distribution<int64_t>(1, k + 1)(rng);
    ASSERT_TRUE(model.Commit(*verified, keep).ok());
    auto reference = Prefilled(model, prompt, 2);
    for (int64_t i = 0; i < keep; ++i) Step(model, *reference, window[i], taps);
    ASSERT_EQ(verified->length(), reference->length());
    const auto next = RandomTokens(rng, 1 + k % 4, vocab);
    request.tokens = next;
    ASSERT_TRUE(model.Forward(*verified, request, &batch).ok());
    for (size_t i = 0; i < next.size(); ++i) {
      const ForwardResult one = Step(model, *reference, next[i], taps);
      EXPECT_TRUE(SameBits(one.logits.data(), &batch.logits[i * vocab], vocab))
          << "after keeping " << keep << ", row " << i;
    }
    ASSERT_TRUE(model.Commit(*verified, static_cast<int64_t>(next.size())).ok());
  }
}

// Prefill in chunks of 1, 3 and all rows: the same last logits and taps, bit for bit.
inline void ExpectPrefillChunkingInvariant(const TargetModel& model, int64_t prompt_len,
                                           uint32_t seed) {
  std::mt19937 rng(seed);
  const auto prompt = RandomTokens(rng, prompt_len, model.config().vocab_size);
  const std::vector<int64_t> taps = {model.config().num_layers / 2};
  ForwardResult first;
  for (int64_t chunk : {prompt_len, int64_t{1}, int64_t{3}}) {
    auto state = model.NewSequence();
    ASSERT_TRUE(state.ok());
    auto result = Prefill(model, **state, prompt, chunk, taps);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result->logit_rows, 1);
    if (chunk == prompt_len) {
      first = *result;
      continue;
    }
    EXPECT_TRUE(SameBits(first.logits.data(), result->logits.data(), first.logits.size()))
        << "chunk " << chunk;
    ASSERT_EQ(first.taps.size(), result->taps.size());
    EXPECT_TRUE(SameBits(first.taps.data(), result->taps.data(), first.taps.size()))
        << "chunk " << chunk;
  }
}

inline void ExpectSameResult(const ForwardResult& got, const ForwardResult& want) {
  EXPECT_EQ(got.first_position, want.first_position);
  EXPECT_EQ(got.rows, want.rows);
  EXPECT_EQ(got.logit_rows, want.logit_rows);
  for (auto field : {&ForwardResult::logits, &ForwardResult::taps, &ForwardResult::embeddings,
                     &ForwardResult::layer_outputs, &ForwardResult::final_norm}) {
    ASSERT_EQ((got.*field).size(), (want.*field).size());
    EXPECT_TRUE(SameBits((got.*field).data(), (want.*field).data(), (got.*field).size()));
  }
}

// Four sequences with histories of 1, 9, 17 and 135 positions (the last crosses a 128-key
// attention chunk), three rounds: one ForwardBatch of windows of 1..9 rows with mixed logits
// rows, taps and captures equals each sequence's own Forward on a twin state bit for bit, and
// committing a random prefix of each keeps the twins equal.
inline void ExpectBatchEqualsSolo(const TargetModel& model, uint32_t seed) {
  const int64_t vocab = model.config().vocab_size, layers = model.config().num_layers;
  std::mt19937 rng(seed);
  constexpr int kSequences = 4;
  std::vector<std::unique_ptr<SequenceState>> batched, solo;
  for (int s = 0; s < kSequences; ++s) {
    const auto prompt = RandomTokens(rng, s == 3 ? 135 : 1 + 8 * s, vocab);
    batched.push_back(Prefilled(model, prompt, 5));
    solo.push_back(Prefilled(model, prompt, 64));
  }
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round);
    std::vector<std::vector<int32_t>> windows(kSequences);
    std::vector<ForwardRequest> requests(kSequences);
    std::vector<ForwardResult> results(kSequences);
    std::vector<SequenceForward> batch;
    for (int s = 0; s < kSequences; ++s) {
      windows[s] = RandomTokens(rng, std::uniform_int_distribution<int>(1, 9)(rng), vocab);
      requests[s].tokens = windows[s];
      requests[s].logits = (s + round) % 4 == 3   ? LogitsRows::kLast
                           : (s + round) % 4 == 2 ? LogitsRows::kNone
                                                  : LogitsRows::kAll;
      if (s % 2 == 1) requests[s].tap_layer_ids = {layers - 1, 0};
      requests[s].capture_hidden_states = s == round;
      batch.push_back({batched[s].get(), &requests[s], &results[s]});
    }
    ASSERT_TRUE(model.ForwardBatch(batch).ok());
    for (int s = 0; s < kSequences; ++s) {
      SCOPED_TRACE(::testing::Message() << "sequence " << s);
      ForwardResult alone;
      ASSERT_TRUE(model.Forward(*solo[s], requests[s], &alone).ok());
      ExpectSameResult(results[s], alone);
      const int64_t keep =
          std::uniform_int_distribution<int64_t>(0, static_cast<int64_t>(windows[s].size()))(rng);
      ASSERT_TRUE(model.Commit(*batched[s], keep).ok());
      ASSERT_TRUE(model.Commit(*solo[s], keep).ok());
    }
  }
}

}  // namespace twinspan::target::testing

#endif  // TWINSPAN_TESTS_UNIT_TARGET_PROPERTIES_H_
