#include "common/exl3/span_view.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/exl3/plan.h"
#include "common/status.h"

namespace twinspan::exl3 {

BlockRange SpanBlocks(ColumnSpan span, int64_t n_columns) {
  const int64_t total = n_columns / kHadamardSize;
  BlockRange range{span.begin / kHadamardSize, (span.end + kHadamardSize - 1) / kHadamardSize};
  const int64_t wanted = std::min(kWideBlocks, total);
  if (range.last - range.first < wanted) {
    range.last = std::min(total, range.first + wanted);
    range.first = range.last - wanted;
  }
  return range;
}

absl::StatusOr<std::vector<SpanView>> MakeSpanViews(const Weight& head,
                                                    std::span<const ColumnSpan> spans) {
  std::vector<SpanView> views;
  for (const ColumnSpan& span : spans) {
    if (span.begin < 0 || span.begin >= span.end || span.end > head.n()) {
      return absl::InvalidArgumentError(
          absl::StrCat("EXL3 head \"", head.name(), "\": span [", span.begin, ", ", span.end,
                       ") is empty or outside its ", head.n(), " columns"));
    }
    const BlockRange blocks = SpanBlocks(span, head.n());
    ABSL_ASSIGN_OR_RETURN(Weight view, head.columns(blocks.first * kHadamardSize,
                                                    (blocks.last - blocks.first) * kHadamardSize));
    // columns() is relative to `head`; keep spans in the same coordinates as first_column().
    views.push_back(
        {std::move(view), {span.begin + head.first_column(), span.end + head.first_column()}});
  }
  return views;
}

int64_t PackedSize(std::span<const SpanView> views) {
  int64_t total = 0;
  for (const SpanView& view : views) total += view.size();
  return total;
}

absl::Status PackSpanLogits(std::span<const SpanView> views,
                            std::span<const float* const> view_outputs, int64_t rows, float* packed,
                            int64_t packed_stride) {
  if (view_outputs.size() != views.size() || packed_stride < PackedSize(views) || rows < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PackSpanLogits: ", view_outputs.size(), " outputs for ", views.size(),
        " span views, packed row stride ", packed_stride, " for ", PackedSize(views), " logits"));
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* out = packed + r * packed_stride;
    for (size_t i = 0; i < views.size(); ++i) {
      const float* row = view_outputs[i] + r * views[i].weight.n();
      std::memcpy(out, row + views[i].drop_front(), views[i].size() * sizeof(float));
      out += views[i].size();
    }
  }
  return absl::OkStatus();
}

}  // namespace twinspan::exl3
