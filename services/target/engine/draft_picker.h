// Which proposal a stream verifies in a round: the drafter's block or a context copy, by the
// longer expected accept. A chain of k drafts whose tokens each match with probability p (given
// the ones before matched) is expected to yield p + p^2 + ... + p^k accepted tokens; p is
// estimated per source from the stream's own rounds, including what the proposal that was not
// verified would have accepted (its tokens against the ones the target emitted).
#ifndef TWINSPAN_SERVICES_TARGET_ENGINE_DRAFT_PICKER_H_
#define TWINSPAN_SERVICES_TARGET_ENGINE_DRAFT_PICKER_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace twinspan::engine {

enum class DraftSource { kDrafter = 0, kContextCopy = 1 };
inline constexpr int kDraftSources = 2;

// The metrics' `source` label: "drafter" or "context_copy".
const char* DraftSourceName(DraftSource source);

// Not thread-safe: one stream's.
class DraftPicker {
 public:
  // Expected accepted tokens of `k` drafts from `source`.
  double ExpectedAccepted(DraftSource source, int64_t k) const;
  // The source to verify: the context copy when its expected accept is longer than the
  // drafter's (an empty proposal expects 0), else the drafter.
  DraftSource Pick(int64_t drafter_tokens, int64_t copy_tokens) const;
  // Learns from a round: `emitted` are the tokens the target emitted (the accepted drafts and the
  // bonus); `proposal` is what `source` proposed (verified or not). Its tokens are compared with
  // the emitted ones as far as those go.
  void Learn(DraftSource source, absl::Span<const uint32_t> proposal,
             absl::Span<const uint32_t> emitted);

 private:
  struct Counts {
    double matched = 0;     // tokens that matched the target's
    double mismatched = 0;  // first tokens that did not
  };
  // Per-token match probability with a prior of `kPrior` tokens at the source's prior rate.
  double MatchProbability(DraftSource source) const;

  std::array<Counts, kDraftSources> counts_;
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_TARGET_ENGINE_DRAFT_PICKER_H_
