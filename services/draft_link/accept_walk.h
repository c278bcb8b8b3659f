// The accept rule of a verify round. The target draws the token of each window row with its keyed
// sampler at that row's position, exactly the draw plain decoding makes after the same tokens.
// The walk starts at the root (the pending token); while a draft below the current row equals the
// row's draw, it steps there. So the emitted tokens are plain decoding's, bit for bit, for chains
// and trees alike, greedy or sampled: drafts only decide how many come out of one round.
#ifndef TWINSPAN_SERVICES_DRAFT_LINK_ACCEPT_WALK_H_
#define TWINSPAN_SERVICES_DRAFT_LINK_ACCEPT_WALK_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "services/draft_link/draft_proposal.h"

namespace twinspan::engine {

struct AcceptedPath {
  // Window rows kept: 0 (the pending token), then the accepted drafts' rows, root to leaf.
  std::vector<int64_t> rows;
  // The draw at each kept row: the accepted drafts' tokens, then the bonus token (last).
  std::vector<uint32_t> tokens;

  int accepted() const { return static_cast<int>(rows.size()) - 1; }
};

// The target's token at window row `row`, which sits at depth `depth` below the pending token (the
// token it draws is at position committed length + depth + 1). Errors end the walk.
using RowDraw = std::function<absl::StatusOr<uint32_t>(int64_t row, int64_t depth)>;

// Walks `proposal` (as verified: window row i + 1 holds proposal.ids[i]) from the root. Where
// several drafts below a row hold the drawn token, the first one is taken. Errors: draw's.
absl::StatusOr<AcceptedPath> WalkAccepted(const DraftProposal& proposal, const RowDraw& draw);

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_DRAFT_LINK_ACCEPT_WALK_H_
