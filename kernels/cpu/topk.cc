#include "kernels/cpu/topk.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"

namespace twinspan::cpu {
namespace {

// True when (va, ia) ranks before (vb, ib): larger value first, then lower index.
bool RanksBefore(float va, int32_t ia, float vb, int32_t ib) {
  return va > vb || (va == vb && ia < ib);
}

}  // namespace

absl::Status TopK(const Context& ctx, std::span<const float> logits, std::span<float> values,
                  std::span<int32_t> indices, const TopKParams& params) {
  const int64_t m = params.rows, n = params.cols, k = params.k;
  if (m < 0 || n <= 0 || k < 1 || k > n) {
    return absl::InvalidArgumentError(
        absl::StrFormat("TopK: k = %d must be in [1, cols = %d] (rows = %d)", k, n, m));
  }
  if (static_cast<int64_t>(logits.size()) != m * n) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TopK: logits has %d values, expected rows x cols = %d x %d", logits.size(), m, n));
  }
  if (static_cast<int64_t>(values.size()) != m * k ||
      static_cast<int64_t>(indices.size()) != m * k) {
    return absl::InvalidArgumentError(
        absl::StrFormat("TopK: values/indices have %d/%d entries, expected rows x k = %d x %d",
                        values.size(), indices.size(), m, k));
  }
  // A NaN has no rank: refuse it before any row runs.
  for (int64_t i = 0; i < m * n; ++i) {
    if (std::isnan(logits[i])) {
      return absl::InvalidArgumentError(
          absl::StrFormat("TopK: logits row %d column %d is NaN", i / n, i % n));
    }
  }
  const auto worse_on_top = [](const std::pair<float, int32_t>& a,
                               const std::pair<float, int32_t>& b) {
    return RanksBefore(a.first, a.second, b.first, b.second);
  };
  ParallelFor(ctx.pool, m, 1, [&](int64_t begin, int64_t end) {
    std::vector<std::pair<float, int32_t>> heap;  // Min-heap of the best k seen so far.
    heap.reserve(k);
    for (int64_t r = begin; r < end; ++r) {
      const float* row = logits.data() + r * n;
      heap.clear();
      for (int64_t c = 0; c < n; ++c) {
        const auto idx = static_cast<int32_t>(c);
        if (static_cast<int64_t>(heap.size()) < k) {
          heap.emplace_back(row[c], idx);
          std::push_heap(heap.begin(), heap.end(), worse_on_top);
        } else if (RanksBefore(row[c], idx, heap.front().first, heap.front().second)) {
          std::pop_heap(heap.begin(), heap.end(), worse_on_top);
          heap.back() = {row[c], idx};
          std::push_heap(heap.begin(), heap.end(), worse_on_top);
        }
      }
      std::sort_heap(heap.begin(), heap.end(), worse_on_top);
      for (int64_t j = 0; j < k; ++j) {
        values[r * k + j] = heap[j].first;
        indices[r * k + j] = heap[j].second;
      }
    }
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
