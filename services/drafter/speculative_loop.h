// The greedy speculative loop of z-lab's dflash_generate, over a TargetModel and a Drafter in one
// process: verify [pending, drafts], accept up to the first mismatch plus the bonus, commit, feed
// the kept rows' taps. A reference for golden tests and tools; the lane engine serves for real.
#ifndef TWINSPAN_SERVICES_DRAFTER_SPECULATIVE_LOOP_H_
#define TWINSPAN_SERVICES_DRAFTER_SPECULATIVE_LOOP_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "services/drafter/drafter.h"
#include "services/target/target_model.h"

namespace twinspan::drafter {

struct SpeculativeResult {
  std::vector<int32_t> output_ids;      // The new tokens, first (from the prefill) included.
  std::vector<int64_t> accept_lengths;  // Tokens committed per round, bonus included.
  std::vector<int32_t> round_anchors;   // Each round's pending token.
  std::vector<std::vector<int32_t>> round_proposals;  // Each round's drafts (fewer at the end).
};

// Generates max_new_tokens greedily. Rounds draft min(block_size, remaining + 1) - 1 tokens, as the
// reference cuts its last blocks. block_size 0 uses the drafter's own. Errors from the target and
// drafter; InvalidArgument for an empty prompt or max_new_tokens < 1.
absl::StatusOr<SpeculativeResult> GreedySpeculativeGenerate(const target::TargetModel& target,
                                                            const Drafter& drafter,
                                                            absl::Span<const int32_t> prompt,
                                                            int64_t max_new_tokens,
                                                            int64_t block_size = 0);

// Plain greedy decoding (no drafter) for the same comparison.
absl::StatusOr<std::vector<int32_t>> GreedyGenerate(const target::TargetModel& target,
                                                    absl::Span<const int32_t> prompt,
                                                    int64_t max_new_tokens);

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_DRAFTER_SPECULATIVE_LOOP_H_
