// What a drafter proposes for one round: a chain of drafts after the pending token, or a tree of
// them (DFlash2's best-first tree over its selector's candidates). Rows of the verify window are
// [pending, ids[0], ids[1], ...]; in a tree, ids[i] follows window row parents[i] (0: the pending
// token, j: ids[j - 1]), an earlier row, so the window's rows are in an order the target can run.
#ifndef TWINSPAN_SERVICES_DRAFT_LINK_DRAFT_PROPOSAL_H_
#define TWINSPAN_SERVICES_DRAFT_LINK_DRAFT_PROPOSAL_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace twinspan::engine {

struct DraftProposal {
  std::vector<uint32_t> ids;
  // Empty: a chain (ids[i] follows ids[i - 1]). Else one per id, each in [0, i] for ids[i].
  std::vector<uint32_t> parents;

  bool is_tree() const { return !parents.empty(); }
  // Same drafts in the same shape (what a resumed drafter must propose, as a fresh one does).
  friend bool operator==(const DraftProposal&, const DraftProposal&) = default;

  // InvalidArgument naming the draft for an id outside [0, vocab), a parent that is not an earlier
  // row, a parents list of another length, or more than max_nodes drafts.
  absl::Status Validate(int vocab, int64_t max_nodes) const;
  // Parent of every window row ([-1, parents...]; a chain's are [-1, 0, 1, ...]), the form the
  // target's tree forward takes (kernels/cpu/tree_rows.h). REQUIRES: Validate passed.
  std::vector<int32_t> WindowParents() const;
  // Keeps the drafts at depth <= max_depth among the first max_nodes (parents come first, so what
  // stays is a tree). A chain stays a chain.
  void Prune(int64_t max_depth, int64_t max_nodes);
  // The drafts along the first child of each row from the root: the tree's likeliest path when the
  // drafter added children best first (what a target that verifies only chains gets).
  DraftProposal MainChain() const;
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_DRAFT_LINK_DRAFT_PROPOSAL_H_
