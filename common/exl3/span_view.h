// The two-span (or any-span) head: views of whole 128-column blocks of an EXL3 head that cover
// vocabulary spans, and the packing of their outputs into one row of span logits.
#ifndef TWINSPAN_COMMON_EXL3_SPAN_VIEW_H_
#define TWINSPAN_COMMON_EXL3_SPAN_VIEW_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/exl3/weight.h"

namespace twinspan::exl3 {

// Columns [begin, end) of the head (vocabulary ids).
struct ColumnSpan {
  int64_t begin = 0;
  int64_t end = 0;
};

// One span's view. Its output row has weight.n() values; the span's logits are the `size()`
// values starting at `drop_front()`.
struct SpanView {
  Weight weight;
  ColumnSpan span;

  int64_t drop_front() const { return span.begin - weight.first_column(); }
  int64_t size() const { return span.end - span.begin; }
};

// The 128-column blocks [first, last) a span's view covers in a matrix of `n_columns` columns:
// the blocks the span touches, widened to at least kWideBlocks blocks (towards the end of the
// matrix first, then towards its start; all blocks when there are fewer) so that the view plans
// as the full matrix does. For the Qwen3.8-27B tail span [248032, 248320) of 248320 columns that
// is the last 64 blocks, from column 240128. REQUIRES: 0 <= begin < end <= n_columns.
struct BlockRange {
  int64_t first = 0;
  int64_t last = 0;  // Exclusive.
};
BlockRange SpanBlocks(ColumnSpan span, int64_t n_columns);

// One view per span, in span order, covering SpanBlocks(span, head.n()); the tail view of the
// Qwen3.8-27B head drops its first 7904 columns when packing.
// InvalidArgument naming the span unless 0 <= begin < end <= head.n().
absl::StatusOr<std::vector<SpanView>> MakeSpanViews(const Weight& head,
                                                    std::span<const ColumnSpan> spans);

// Total logits the spans produce: the sum of their sizes.
int64_t PackedSize(std::span<const SpanView> views);

// packed[r, :] = the spans' logits side by side, in span order, from view_outputs[i] (rows x
// views[i].weight.n(), row stride views[i].weight.n()). `packed` has row stride `packed_stride`.
// InvalidArgument when view_outputs.size() != views.size() or packed_stride < PackedSize(views).
absl::Status PackSpanLogits(std::span<const SpanView> views,
                            std::span<const float* const> view_outputs, int64_t rows, float* packed,
                            int64_t packed_stride);

}  // namespace twinspan::exl3

#endif  // TWINSPAN_COMMON_EXL3_SPAN_VIEW_H_
