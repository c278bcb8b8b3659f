// Packed span columns back to vocabulary ids: the drafter's top-k runs over the span head's packed
// logits (spans side by side), and the selector walk and the target want token ids.
#ifndef TWINSPAN_KERNELS_CPU_SPAN_IDS_H_
#define TWINSPAN_KERNELS_CPU_SPAN_IDS_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "common/exl3/span_view.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

// At most this many spans (a head variant's list; the CUDA twin carries them in its launch).
inline constexpr int64_t kMaxSpanIdsSpans = 64;

// ids[i] = spans[s].begin + columns[i] - (sizes of spans 0..s-1), for the span s that packed
// column columns[i] falls in; -1 (the CUDA TopK's mark of a NaN row) stays -1. ids may alias
// columns. InvalidArgument for ids.size() != columns.size(), no spans or more than
// kMaxSpanIdsSpans, a span with begin < 0 or end <= begin, or a column outside [-1, columns).
absl::Status SpanIds(const Context& ctx, std::span<const exl3::ColumnSpan> spans,
                     std::span<const int32_t> columns, std::span<int32_t> ids);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_SPAN_IDS_H_
