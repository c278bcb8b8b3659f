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

absl::Status TopK(std::span<const float> logits, std::span<float> values,
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
  std::vector<std::pair<float, int32_t>> heap;  // Min-heap of the best k seen so far.
  heap.reserve(k);
  const auto worse_on_top = [](const std::pair<float, int32_t>& a,
                               const std::pair<float, int32_t>& b) {
    return RanksBefore(a.first, a.second, b.first, b.second);
  };
  for (int64_t r = 0; r < m; ++r) {
    const float* row = logits.data() + r * n;
    heap.clear();
    for (int64_t c = 0; c < n; ++c) {
      const float v = row[c];
      if (std::isnan(v)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("TopK: logits row %d column %d is NaN", r, c));
      }
      const auto idx = static_cast<int32_t>(c);
      if (static_cast<int64_t>(heap.size()) < k) {
        heap.emplace_back(v, idx);
        std::push_heap(heap.begin(), heap.end(), worse_on_top);
      } else if (RanksBefore(v, idx, heap.front().first, heap.front().second)) {
        std::pop_heap(heap.begin(), heap.end(), worse_on_top);
        heap.back() = {v, idx};
        std::push_heap(heap.begin(), heap.end(), worse_on_top);
      }
    }
    std::sort_heap(heap.begin(), heap.end(), worse_on_top);
    for (int64_t j = 0; j < k; ++j) {
      values[r * k + j] = heap[j].first;
      indices[r * k + j] = heap[j].second;
    }
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
