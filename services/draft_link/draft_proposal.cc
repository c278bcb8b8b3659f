#include "services/draft_link/draft_proposal.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace twinspan::engine {

absl::Status DraftProposal::Validate(int vocab, int64_t max_nodes) const {
  if (static_cast<int64_t>(ids.size()) > max_nodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("proposal of ", ids.size(), " drafts; the limit is ", max_nodes));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= static_cast<uint32_t>(vocab)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "draft ", i, " is token ", ids[i], ", outside the vocabulary (size ", vocab, ")"));
    }
  }
  if (parents.empty()) return absl::OkStatus();
  if (parents.size() != ids.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("proposal tree of ", ids.size(), " drafts with ", parents.size(), " parents"));
  }
  for (size_t i = 0; i < parents.size(); ++i) {
    if (parents[i] > i) {
      return absl::InvalidArgumentError(
          absl::StrCat("draft ", i, " follows window row ", parents[i],
                       "; a parent must be an earlier row in [0, ", i, "]"));
    }
  }
  return absl::OkStatus();
}

std::vector<int32_t> DraftProposal::WindowParents() const {
  std::vector<int32_t> window = {-1};
  for (size_t i = 0; i < ids.size(); ++i) {
    window.push_back(parents.empty() ? static_cast<int32_t>(i) : static_cast<int32_t>(parents[i]));
  }
  return window;
}

void DraftProposal::Prune(int64_t max_depth, int64_t max_nodes) {
  max_depth = std::max<int64_t>(max_depth, 0);
  max_nodes = std::max<int64_t>(max_nodes, 0);
  if (parents.empty()) {
    ids.resize(std::min<int64_t>({static_cast<int64_t>(ids.size()), max_depth, max_nodes}));
    return;
  }
  // new_row[r]: where window row r went (-1: dropped); a kept draft's parent is kept too.
  std::vector<int64_t> depth = {0}, new_row = {0};
  DraftProposal kept;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t parent = new_row[parents[i]];
    depth.push_back(depth[parents[i]] + 1);
    const bool keep = parent >= 0 && depth.back() <= max_depth &&
                      static_cast<int64_t>(kept.ids.size()) < max_nodes;
    new_row.push_back(keep ? static_cast<int64_t>(kept.ids.size()) + 1 : -1);
    if (keep) {
      kept.ids.push_back(ids[i]);
      kept.parents.push_back(static_cast<uint32_t>(parent));
    }
  }
  *this = std::move(kept);
}

DraftProposal DraftProposal::MainChain() const {
  if (parents.empty()) return *this;
  DraftProposal chain;
  uint32_t row = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (parents[i] != row) continue;
    chain.ids.push_back(ids[i]);
    row = static_cast<uint32_t>(i) + 1;
  }
  return chain;
}

}  // namespace twinspan::engine
