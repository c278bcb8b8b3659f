// The drafted == plain check (DESIGN.md, exactness contract 1) shared by the CPU golden test and
// its GPU twin: drafts may change only speed, never the tokens.
#ifndef TWINSPAN_TESTS_GOLDEN_DRAFTER_DRAFTED_PLAIN_CHECK_H_
#define TWINSPAN_TESTS_GOLDEN_DRAFTER_DRAFTED_PLAIN_CHECK_H_

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "services/drafter/drafter.h"
#include "services/target/target_model.h"
#include "tests/testing/speculative_loop.h"

namespace twinspan::drafter::testing {

// For seeds 1 and 2, greedy (temperature 0) or sampled with top_k 40: SpeculativeGenerate of 20
// tokens from a fixed prompt (trees of tree_nodes drafts when > 0) returns PlainGenerate's ids,
// and its accept lengths add up to them.
inline void ExpectDraftedEqualsPlain(const target::TargetModel& target, const Drafter& drafter,
                                     float temperature, int64_t tree_nodes = 0) {
  const std::vector<int32_t> prompt = {11, 402, 95, 3001, 77, 12, 1999, 4000, 5};
  const sampler::SamplingParams sampling{.temperature = temperature, .top_k = 40};
  for (const uint64_t seed : {1u, 2u}) {
    auto drafted =
        SpeculativeGenerate(target, drafter, prompt, 20,
                            {.sampling = sampling, .seed = seed, .tree_nodes = tree_nodes});
    ASSERT_TRUE(drafted.ok()) << drafted.status();
    for (const std::vector<int32_t>& parents : drafted->round_parents) {
      EXPECT_EQ(parents.empty(), tree_nodes == 0);  // Trees when asked, else chains.
    }
    auto plain = PlainGenerate(target, prompt, 20, sampling, seed);
    ASSERT_TRUE(plain.ok()) << plain.status();
    EXPECT_EQ(drafted->output_ids, *plain) << "seed " << seed;
    int64_t total = 0;
    for (int64_t n : drafted->accept_lengths) total += n;
    EXPECT_EQ(total + 1, 20);
  }
}

}  // namespace twinspan::drafter::testing

#endif  // TWINSPAN_TESTS_GOLDEN_DRAFTER_DRAFTED_PLAIN_CHECK_H_
