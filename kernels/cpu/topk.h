// Top-k over the rows of a logits matrix: the drafter's candidate cut and its greedy argmax.
#ifndef TWINSPAN_KERNELS_CPU_TOPK_H_
#define TWINSPAN_KERNELS_CPU_TOPK_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

struct TopKParams {
  int64_t rows = 0;  // m
  int64_t cols = 0;  // n: columns per row of `logits`
  int64_t k = 0;     // 1 <= k <= cols
};

// For each row of `logits` [rows, cols], writes its k largest values to `values` [rows, k] and
// their column indices to `indices` [rows, k], sorted by value descending; equal values keep the
// lower column first, so the result never depends on threads or row count. Rows run in parallel.
// Errors: InvalidArgument naming the argument when a size disagrees with `params`, when k is out of
// [1, cols], or when a row holds a NaN (a NaN logit has no rank).
absl::Status TopK(const Context& ctx, std::span<const float> logits, std::span<float> values,
                  std::span<int32_t> indices, const TopKParams& params);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_TOPK_H_
