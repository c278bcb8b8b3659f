// Sampled speculative decoding on a random qwen3 model gives plain decoding's tokens: the keyed
// sampler draws each row by (seed, absolute position), verify rows equal serial steps, and drafts
// are accepted only when equal to the target's own draw.
#include <random>
#include <vector>

#include "common/sampler/keyed_sampler.h"
#include "gtest/gtest.h"
#include "tests/unit/target_properties.h"
#include "tests/unit/target_random_model.h"

namespace twinspan::target {
namespace {

using sampler::KeyedSampler;
using sampler::SamplingParams;

int32_t Draw(const float* logits, int64_t vocab, const SamplingParams& p, uint64_t seed,
             int64_t position) {
  auto token = KeyedSampler().Sample(absl::MakeConstSpan(logits, vocab), p, seed, position);
  EXPECT_TRUE(token.ok()) << token.status();
  return token.ok() ? *token : 0;
}

std::vector<int32_t> Plain(const TargetModel& model, const std::vector<int32_t>& prompt,
                           const SamplingParams& p, uint64_t seed, int n) {
  const int64_t vocab = model.config().vocab_size;
  auto state = *model.NewSequence();
  auto prefill = Prefill(model, *state, prompt, 5, {});
  std::vector<int32_t> out = {Draw(prefill->logits.data(), vocab, p, seed, state->length())};
  while (static_cast<int>(out.size()) < n) {
    const ForwardResult r = testing::Step(model, *state, out.back(), {});
    out.push_back(Draw(r.logits.data(), vocab, p, seed, state->length()));
  }
  return out;
}

// Drafts are the plain tokens with random corruptions, so rounds accept 0..k tokens.
std::vector<int32_t> Drafted(const TargetModel& model, const std::vector<int32_t>& prompt,
                             const SamplingParams& p, uint64_t seed, int n,
                             const std::vector<int32_t>& oracle, std::mt19937& rng) {
  const int64_t vocab = model.config().vocab_size;
  auto state = *model.NewSequence();
  auto prefill = Prefill(model, *state, prompt, 3, {});
  std::vector<int32_t> out = {Draw(prefill->logits.data(), vocab, p, seed, state->length())};
  while (static_cast<int>(out.size()) < n) {
    const int k = std::uniform_int_distribution<int>(1, 7)(rng);
    std::vector<int32_t> window = {out.back()};
    for (int i = 0; i < k; ++i) {
      const size_t next = out.size() + i;
      const bool corrupt = std::uniform_int_distribution<int>(0, 3)(rng) == 0;
      window.push_back(next < oracle.size() && !corrupt
                           ? oracle[next]
                           : std::uniform_int_distribution<int32_t>(0, vocab - 1)(rng));
    }
    ForwardRequest request;
    request.tokens = window;
    ForwardResult r;
    EXPECT_TRUE(model.Forward(*state, request, &r).ok());
    int64_t accepted = 0;
    int32_t bonus = 0;
    for (int64_t row = 0; row <= k; ++row) {
      // Row `row` sits at position length + row; its draw is the token at the next position.
      bonus = Draw(&r.logits[row * vocab], vocab, p, seed, state->length() + row + 1);
      if (row == k || window[row + 1] != bonus) break;
      ++accepted;
    }
    EXPECT_TRUE(model.Commit(*state, accepted + 1).ok());
    for (int64_t i = 1; i <= accepted; ++i) out.push_back(window[i]);
    out.push_back(bonus);
  }
  out.resize(n);
  return out;
}

TEST(SampledSpeculationTest, DraftedEqualsPlainForSeveralSeedsAndTemperatures) {
  TargetOptions options;
  options.context = 128;
  auto model = testing::RandomQwen3Model(options, 21);
  ASSERT_NE(model, nullptr);
  std::mt19937 rng(5);
  const auto prompt = testing::RandomTokens(rng, 6, model->config().vocab_size);
  std::vector<SamplingParams> settings(4);
  settings[1].temperature = 0.8f;
  settings[1].top_p = 0.9f;
  settings[2].temperature = 1.3f;
  settings[2].top_k = 20;
  settings[3].temperature = 0.6f;
  settings[3].min_p = 0.05f;
  for (uint64_t seed : {1ull, 77ull, 123456789ull}) {
    for (size_t s = 0; s < settings.size(); ++s) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << ", setting " << s);
      const auto plain = Plain(*model, prompt, settings[s], seed, 40);
      EXPECT_EQ(Drafted(*model, prompt, settings[s], seed, 40, plain, rng), plain);
      EXPECT_EQ(Plain(*model, prompt, settings[s], seed, 40), plain);  // A repeat agrees.
    }
  }
  // Different seeds really change a sampled run (so the equality above is not vacuous).
  EXPECT_NE(Plain(*model, prompt, settings[2], 1, 40), Plain(*model, prompt, settings[2], 2, 40));
}

}  // namespace
}  // namespace twinspan::target
