#include "services/drafter/draft_tree.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <tuple>

#include "absl/strings/str_format.h"

namespace twinspan::drafter {
namespace {

// A candidate node: slot s, candidate index c, below window row `parent`.
struct Frontier {
  float log_prob = 0.0f;
  int64_t slot = 0;
  int64_t candidate = 0;
  int32_t parent = 0;
};

// Best first: the higher path probability, then the earlier slot, then the lower candidate.
struct Worse {
  bool operator()(const Frontier& a, const Frontier& b) const {
    return std::make_tuple(a.log_prob, -a.slot, -a.candidate) <
           std::make_tuple(b.log_prob, -b.slot, -b.candidate);
  }
};

// log softmax over a row's first `n` live candidates (id >= 0); -inf for the others.
std::vector<float> LogSoftmax(const float* scores, const int32_t* ids, int64_t n) {
  float max_score = -INFINITY;
  for (int64_t c = 0; c < n; ++c) {
    if (ids[c] >= 0) max_score = std::max(max_score, scores[c]);
  }
  double total = 0.0;
  for (int64_t c = 0; c < n; ++c) {
    if (ids[c] >= 0) total += std::exp(static_cast<double>(scores[c]) - max_score);
  }
  std::vector<float> out(n, -INFINITY);
  if (total == 0.0) return out;  // No live candidate.
  const float log_total = max_score + static_cast<float>(std::log(total));
  for (int64_t c = 0; c < n; ++c) {
    if (ids[c] >= 0) out[c] = scores[c] - log_total;
  }
  return out;
}

}  // namespace

absl::StatusOr<DraftTree> BuildDraftTree(std::span<const int32_t> candidate_ids,
                                         std::span<const float> table, int64_t slots, int64_t k,
                                         const DraftTreeOptions& options) {
  if (slots < 0 || k < 1 || static_cast<int64_t>(candidate_ids.size()) != slots * k ||
      static_cast<int64_t>(table.size()) != slots * k * k || options.nodes < 0 ||
      options.max_children < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "BuildDraftTree: %d candidate ids and %d scores for %d slots of %d candidates, %d nodes, "
        "%d children a node",
        candidate_ids.size(), table.size(), slots, k, options.nodes, options.max_children));
  }
  const int64_t children = std::min(k, options.max_children);
  DraftTree tree;
  std::priority_queue<Frontier, std::vector<Frontier>, Worse> frontier;
  // The children of window row `parent` (candidate `prev` of slot - 1, or the root).
  auto expand = [&](int64_t slot, int64_t prev, int32_t parent, float log_prob) {
    if (slot >= slots) return;
    const int32_t* ids = candidate_ids.data() + slot * k;
    const std::vector<float> lp = LogSoftmax(table.data() + (slot * k + prev) * k, ids, children);
    for (int64_t c = 0; c < children; ++c) {
      if (ids[c] >= 0) frontier.push({log_prob + lp[c], slot, c, parent});
    }
  };
  expand(0, 0, 0, 0.0f);
  while (static_cast<int64_t>(tree.ids.size()) < options.nodes && !frontier.empty()) {
    const Frontier best = frontier.top();
    frontier.pop();
    tree.ids.push_back(candidate_ids[best.slot * k + best.candidate]);
    tree.parents.push_back(best.parent);
    tree.log_probs.push_back(best.log_prob);
    expand(best.slot + 1, best.candidate, static_cast<int32_t>(tree.ids.size()), best.log_prob);
  }
  return tree;
}

}  // namespace twinspan::drafter
