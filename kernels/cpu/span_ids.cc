#include "kernels/cpu/span_ids.h"

#include "absl/strings/str_format.h"

namespace twinspan::cpu {

absl::Status SpanIds(const Context& /*ctx*/, std::span<const exl3::ColumnSpan> spans,
                     std::span<const int32_t> columns, std::span<int32_t> ids) {
  if (ids.size() != columns.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SpanIds: %d ids for %d columns; they must be equal", ids.size(), columns.size()));
  }
  const int64_t count = static_cast<int64_t>(spans.size());
  if (count < 1 || count > kMaxSpanIdsSpans) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SpanIds: %d spans, need 1..%d", count, kMaxSpanIdsSpans));
  }
  int64_t total = 0;
  for (int64_t s = 0; s < count; ++s) {
    if (spans[s].begin < 0 || spans[s].end <= spans[s].begin) {
      return absl::InvalidArgumentError(
          absl::StrFormat("SpanIds: span %d is [%d, %d)", s, spans[s].begin, spans[s].end));
    }
    total += spans[s].end - spans[s].begin;
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    int64_t c = columns[i];
    if (c < -1 || c >= total) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "SpanIds: column %d at %d is outside the %d packed columns", c, i, total));
    }
    int32_t id = -1;
    for (int64_t s = 0; c >= 0 && s < count; ++s) {
      const int64_t size = spans[s].end - spans[s].begin;
      if (c < size) {
        id = static_cast<int32_t>(spans[s].begin + c);
        break;
      }
      c -= size;
    }
    ids[i] = id;
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
