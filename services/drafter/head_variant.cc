#include "services/drafter/head_variant.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace twinspan::drafter {

int64_t HeadVariant::columns() const {
  int64_t total = 0;
  for (const exl3::ColumnSpan& span : spans) total += span.end - span.begin;
  return total;
}

int32_t HeadVariant::GlobalId(int64_t local) const {
  for (const exl3::ColumnSpan& span : spans) {
    const int64_t size = span.end - span.begin;
    if (local < size) return static_cast<int32_t>(span.begin + local);
    local -= size;
  }
  return -1;  // Unreachable under the REQUIRES.
}

absl::StatusOr<HeadVariant> MakeHeadVariant(const std::string& spec, int64_t vocab,
                                            const std::map<std::string, std::string>& named) {
  if (const auto it = named.find(spec); it != named.end() && spec != "full") {
    absl::StatusOr<HeadVariant> variant = MakeHeadVariant(it->second, vocab);
    if (!variant.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat("the checkpoint's head variant %s: %s",
                                                        spec, variant.status().message()));
    }
    variant->name = spec;
    return variant;
  }
  if (vocab <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat("head variant %s: vocab %d", spec, vocab));
  }
  HeadVariant variant{.name = spec};
  if (spec == "full") {
    variant.spans = {{0, vocab}};
    return variant;
  }
  if (spec == "two-span") {
    const int64_t head_end = std::min(kTwoSpanHeadIds, vocab);
    const int64_t tail_begin = std::max<int64_t>(0, vocab - kTwoSpanTailIds);
    if (tail_begin <= head_end) {
      variant.spans = {{0, vocab}};
    } else {
      variant.spans = {{0, head_end}, {tail_begin, vocab}};
    }
    return variant;
  }
  int64_t previous_end = 0;
  for (const absl::string_view part : absl::StrSplit(spec, ',')) {
    const std::vector<absl::string_view> bounds = absl::StrSplit(part, ':');
    exl3::ColumnSpan span;
    if (bounds.size() != 2 || !absl::SimpleAtoi(bounds[0], &span.begin) ||
        !absl::SimpleAtoi(bounds[1], &span.end)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "head variant \"%s\": expected full, two-span or spans like 0:98304,248032:248320",
          spec));
    }
    if (span.begin < previous_end || span.begin >= span.end || span.end > vocab) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "head variant \"%s\": span %d:%d must be non-empty, ascending, disjoint and inside "
          "[0, %d)",
          spec, span.begin, span.end, vocab));
    }
    previous_end = span.end;
    variant.spans.push_back(span);
  }
  return variant;
}

}  // namespace twinspan::drafter
