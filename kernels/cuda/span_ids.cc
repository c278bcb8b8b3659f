// Host side of SpanIds: the CPU op's checks of the spans and sizes, then the launch (span_ids.cu).
#include "kernels/cuda/span_ids.cuh"

#include <cstdint>

#include "absl/strings/str_format.h"
#include "kernels/cpu/span_ids.h"
#include "kernels/cuda/span_ids_launch.h"

namespace twinspan::cuda {

absl::Status SpanIds(const Context& ctx, std::span<const exl3::ColumnSpan> spans,
                     std::span<const int32_t> columns, std::span<int32_t> ids) {
  namespace sk = span_ids_kernel;
  static_assert(sk::kMaxSpans == cpu::kMaxSpanIdsSpans);
  if (ids.size() != columns.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SpanIds: %d ids for %d columns; they must be equal", ids.size(), columns.size()));
  }
  const int64_t count = static_cast<int64_t>(spans.size());
  if (count < 1 || count > sk::kMaxSpans) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SpanIds: %d spans, need 1..%d", count, sk::kMaxSpans));
  }
  sk::Args args{};
  int64_t total = 0;
  for (int64_t s = 0; s < count; ++s) {
    if (spans[s].begin < 0 || spans[s].end <= spans[s].begin) {
      return absl::InvalidArgumentError(
          absl::StrFormat("SpanIds: span %d is [%d, %d)", s, spans[s].begin, spans[s].end));
    }
    total += spans[s].end - spans[s].begin;
    args.begin[s] = spans[s].begin;
    args.packed_end[s] = total;
  }
  if (columns.empty()) return absl::OkStatus();
  if (columns.data() == nullptr || ids.data() == nullptr) {
    return absl::InvalidArgumentError("SpanIds: columns and ids must be device memory");
  }
  args.columns = columns.data();
  args.ids = ids.data();
  args.count = static_cast<int64_t>(columns.size());
  args.spans = static_cast<int>(count);
  const cudaError_t e = sk::LaunchSpanIds(args, ctx.stream);
  if (e != cudaSuccess) {
    return absl::InternalError(
        absl::StrFormat("SpanIds: launch failed: %s", cudaGetErrorString(e)));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cuda
