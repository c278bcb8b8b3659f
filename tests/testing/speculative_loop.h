// The speculative loop of z-lab's dflash_generate, over a TargetModel and a Drafter in one
// process: verify [pending, drafts], accept up to the first mismatch plus the bonus, commit, feed
// the kept rows' taps. The target samples every row with the keyed sampler at the position the new
// token takes, so a drafted run emits exactly the tokens of a plain one (accept-if-equal).
// A reference for the golden, synth and GPU tests; the lane engine serves for real.
#ifndef TWINSPAN_TESTS_TESTING_SPECULATIVE_LOOP_H_
#define TWINSPAN_TESTS_TESTING_SPECULATIVE_LOOP_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/sampler/keyed_sampler.h"
#include "services/drafter/drafter.h"
#include "services/target/target_model.h"

namespace twinspan::drafter {

struct SpeculativeOptions {
  int64_t block_size = 0;            // 0: the drafter's own.
  sampler::SamplingParams sampling;  // Default greedy.
  uint64_t seed = 0;                 // Keys the target's draws and the DFlash2 walk's.
  // > 0: each round drafts a tree of this many drafts (a DFlash2 drafter, greedy), verified in
  // one tree forward and walked with the engine's accept rule (services/draft_link/accept_walk.h).
  int64_t tree_nodes = 0;
};

struct SpeculativeResult {
  std::vector<int32_t> output_ids;      // The new tokens, first (from the prefill) included.
  std::vector<int64_t> accept_lengths;  // Tokens committed per round, bonus included.
  std::vector<int32_t> round_anchors;   // Each round's pending token.
  std::vector<std::vector<int32_t>> round_proposals;  // Each round's drafts (fewer at the end).
  std::vector<std::vector<int32_t>> round_parents;    // Each round's tree (empty for chains).
};

// Generates max_new_tokens. Rounds draft min(block_size, remaining + 1) - 1 tokens, as the
// reference cuts its last blocks (a tree: that deep). A DFlash2 drafter samples its walk at the
// request's temperature (trees: greedily); a DFlash one drafts greedily. Errors from the target,
// drafter and sampler; InvalidArgument for an empty prompt or max_new_tokens < 1.
absl::StatusOr<SpeculativeResult> SpeculativeGenerate(const target::TargetModel& target,
                                                      const Drafter& drafter,
                                                      absl::Span<const int32_t> prompt,
                                                      int64_t max_new_tokens,
                                                      const SpeculativeOptions& options = {});

// Plain decoding (no drafter), one row per step, same sampler keys.
absl::StatusOr<std::vector<int32_t>> PlainGenerate(const target::TargetModel& target,
                                                   absl::Span<const int32_t> prompt,
                                                   int64_t max_new_tokens,
                                                   const sampler::SamplingParams& sampling = {},
                                                   uint64_t seed = 0);

}  // namespace twinspan::drafter

#endif  // TWINSPAN_TESTS_TESTING_SPECULATIVE_LOOP_H_
