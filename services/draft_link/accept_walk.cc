#include "services/draft_link/accept_walk.h"

namespace twinspan::engine {

absl::StatusOr<AcceptedPath> WalkAccepted(const DraftProposal& proposal, const RowDraw& draw) {
  const std::vector<int32_t> parents = proposal.WindowParents();
  AcceptedPath path;
  int64_t row = 0;
  while (true) {
    absl::StatusOr<uint32_t> token = draw(row, static_cast<int64_t>(path.rows.size()));
    if (!token.ok()) return token.status();
    path.rows.push_back(row);
    path.tokens.push_back(*token);
    int64_t next = -1;  // The first draft below `row` holding the drawn token.
    for (size_t child = static_cast<size_t>(row) + 1; child < parents.size(); ++child) {
      if (parents[child] == row && proposal.ids[child - 1] == *token) {
        next = static_cast<int64_t>(child);
        break;
      }
    }
    if (next < 0) return path;
    row = next;
  }
}

}  // namespace twinspan::engine
