// DFlash2's tree of drafts, built best first on the host from the selector's score table
// (Backend::SelectorScoreTable): a draft at depth d is one of slot d - 1's top-k candidates, its
// probability the softmax of the candidates' scores after its parent's token, and a node's score
// the product of the probabilities on its path. The likeliest nodes are added first until the
// budget, so every parent comes before its children and the first child of each node is its
// likeliest continuation: the main chain (DraftProposal::MainChain) is a prefix of the greedy
// selector walk's path.
#ifndef TWINSPAN_SERVICES_DRAFTER_DRAFT_TREE_H_
#define TWINSPAN_SERVICES_DRAFTER_DRAFT_TREE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"

namespace twinspan::drafter {

// Largest candidates a node may branch into: the selector ranks 16 at most (Qwen3.8-27B's top_k).
inline constexpr int64_t kMaxTreeChildren = 16;

struct DraftTreeOptions {
  int64_t nodes = 15;  // drafts in the tree (the budget)
  // Candidates per node considered as children: min(top_k, this).
  int64_t max_children = kMaxTreeChildren;
};

struct DraftTree {
  std::vector<int32_t> ids;      // token of each node, in the order added
  std::vector<int32_t> parents;  // window row each follows: 0 the pending token, j ids[j - 1]
  std::vector<float> log_probs;  // each node's path log-probability
};

// candidate_ids [slots, k] (-1 marks no candidate) and table [slots, k, k] as SelectorScoreTable
// wrote them. Ties go to the earlier slot, then the lower candidate index, so a tree is a function
// of its inputs. InvalidArgument for sizes that disagree, nodes < 0 or max_children < 1.
absl::StatusOr<DraftTree> BuildDraftTree(std::span<const int32_t> candidate_ids,
                                         std::span<const float> table, int64_t slots, int64_t k,
                                         const DraftTreeOptions& options);

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_DRAFTER_DRAFT_TREE_H_
