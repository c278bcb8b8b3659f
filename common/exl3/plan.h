// How an EXL3 linear splits its reduction (k) dimension: the K-split count and warps per split.
// The plan depends on the stored matrix's shape only, never on the row count, so every row count
// reduces in the same order (the row-invariance contract; TensorFold's plan(), see
// shared/reference/tensorfold-anchor.md section 2).
#ifndef TWINSPAN_COMMON_EXL3_PLAN_H_
#define TWINSPAN_COMMON_EXL3_PLAN_H_

#include <cstdint>

namespace twinspan::exl3 {

// TensorFold's `wide_blocks = 64`: from this many 128-column blocks up a matrix fills the GPU
// without a K split (one split, eight warps). Span views are widened to at least this many blocks
// so they plan as their parent does.
inline constexpr int64_t kWideBlocks = 64;

struct Plan {
  int k_splits = 1;  // SK: contiguous k ranges reduced separately, then summed in split order.
  int warps = 8;     // WK: contiguous k sub-ranges per split, summed in warp order.

  friend bool operator==(const Plan&, const Plan&) = default;
};

// REQUIRES: k and n are positive multiples of 128.
//   kt = k / 16, nb = n / 128.
//   nb >= kWideBlocks: (1, 8). Else warps = 4 and k_splits doubles from 1 while
//   nb * k_splits < blocks and k_splits < 64.
//   Then while kt % (k_splits * warps) != 0 or kt / (k_splits * warps) < min_tiles: drop warps to
//   4 first, then halve k_splits, stopping at (1, 4).
// The result always divides kt (kt is a multiple of 8).
Plan plan(int64_t k, int64_t n, int blocks = 192, int min_tiles = 8);

}  // namespace twinspan::exl3

#endif  // TWINSPAN_COMMON_EXL3_PLAN_H_
