#include "kernels/cpu/tree_rows.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace twinspan::cpu {

absl::Status CheckTreeParents(const char* op, const int32_t* parents, int64_t rows) {
  if (rows < 1 || parents == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: a tree of %d rows (a root is needed)%s",
                                                      op, rows,
                                                      parents == nullptr ? " and no parents" : ""));
  }
  if (parents[0] != -1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: row 0 is the root; its parent must be -1, got %d", op, parents[0]));
  }
  for (int64_t r = 1; r < rows; ++r) {
    if (parents[r] < 0 || parents[r] >= r) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: row %d has parent %d; a parent must be an earlier row in [0, %d)",
                          op, r, parents[r], r));
    }
  }
  return absl::OkStatus();
}

std::vector<int64_t> TreeDepths(const int32_t* parents, int64_t rows) {
  std::vector<int64_t> depth(rows, 0);
  for (int64_t r = 1; r < rows; ++r) depth[r] = depth[parents[r]] + 1;
  return depth;
}

std::vector<int64_t> TreePath(const int32_t* parents, int64_t row) {
  std::vector<int64_t> path;
  for (int64_t r = row; r >= 0; r = parents[r]) path.push_back(r);
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace twinspan::cpu
