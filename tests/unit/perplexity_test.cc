#include "tools/perplexity/perplexity.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "tests/unit/target_random_model.h"

namespace twinspan::tools {
namespace {

using target::testing::RandomQwen3Model;

// The NLL of ids[1..] given each prefix, from one plain forward's logits.
double ReferenceNll(const target::TargetModel& model, const std::vector<int32_t>& ids) {
  auto state = model.NewSequence();
  target::ForwardRequest request;
  request.tokens = ids;
  target::ForwardResult out;
  EXPECT_TRUE(model.Forward(**state, request, &out).ok());
  const int64_t v = model.config().vocab_size;
  double nll = 0;
  for (size_t r = 0; r + 1 < ids.size(); ++r) {
    double z = 0;
    for (int64_t c = 0; c < v; ++c) z += std::exp(double{out.logits[r * v + c]});
    nll += std::log(z) - out.logits[r * v + ids[r + 1]];
  }
  return nll;
}

TEST(PerplexityTest, WindowsAreFreshSequencesScoredAfterTheirFirstToken) {
  target::TargetOptions options;
  options.context = 64;
  auto model = RandomQwen3Model(options, 3);
  ASSERT_NE(model, nullptr);
  std::vector<int32_t> ids;
  for (int i = 0; i < 23; ++i) ids.push_back((i * 37 + 5) % 96);
  auto r = MeasurePerplexity(*model, ids, 10);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->windows, 3);
  EXPECT_EQ(r->scored_tokens, 9 + 9 + 2);
  const double want = ReferenceNll(*model, {ids.begin(), ids.begin() + 10}) +
                      ReferenceNll(*model, {ids.begin() + 10, ids.begin() + 20}) +
                      ReferenceNll(*model, {ids.begin() + 20, ids.end()});
  EXPECT_NEAR(r->nll_sum, want, 1e-6 * want);
  EXPECT_NEAR(r->perplexity(), std::exp(want / 20), 1e-6 * r->perplexity());
}

TEST(PerplexityTest, RefusesWindowsAndTextsTooShortToScore) {
  target::TargetOptions options;
  auto model = RandomQwen3Model(options, 3);
  ASSERT_NE(model, nullptr);
  EXPECT_FALSE(MeasurePerplexity(*model, std::vector<int32_t>{1, 2, 3}, 1).ok());
  EXPECT_FALSE(MeasurePerplexity(*model, std::vector<int32_t>{1}, 8).ok());
  // A last window of one token has nothing to score and is skipped.
  auto r = MeasurePerplexity(*model, std::vector<int32_t>{1, 2, 3}, 2);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->windows, 1);
}

}  // namespace
}  // namespace twinspan::tools
