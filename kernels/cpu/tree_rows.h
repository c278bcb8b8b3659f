// A window of rows verified as a tree of drafts: row 0 is the root (the pending token) and row
// r > 0 hangs under parents[r] < r, so a row's ancestors come before it and the path to it is its
// chain of parents. Row r sits at depth(r) = depth(parents[r]) + 1: at the absolute position a
// chain verify of its path would give it. The tree ops (TreeAttention, CausalConv1dTree,
// GatedDeltaNetTree) give each row the bits their chain twins give the last row of its path.
#ifndef TWINSPAN_KERNELS_CPU_TREE_ROWS_H_
#define TWINSPAN_KERNELS_CPU_TREE_ROWS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace twinspan::cpu {

// InvalidArgument naming `op` and the row unless rows >= 1, parents[0] == -1 and
// 0 <= parents[r] < r for every r >= 1 (or parents is null).
absl::Status CheckTreeParents(const char* op, const int32_t* parents, int64_t rows);

// depth[r] of every row. REQUIRES: CheckTreeParents passed.
std::vector<int64_t> TreeDepths(const int32_t* parents, int64_t rows);

// The rows from the root to `row`, root first: [0, ..., parents[row], row].
// REQUIRES: CheckTreeParents passed, 0 <= row < rows.
std::vector<int64_t> TreePath(const int32_t* parents, int64_t row);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_TREE_ROWS_H_
