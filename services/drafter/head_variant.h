// Which vocabulary columns the drafter proposes from: a head variant is a named list of spans of
// the target's lm_head. `full` is the whole head; `two-span` the frequent ids and the special tail.
#ifndef TWINSPAN_SERVICES_DRAFTER_HEAD_VARIANT_H_
#define TWINSPAN_SERVICES_DRAFTER_HEAD_VARIANT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/exl3/span_view.h"

namespace twinspan::drafter {

// The Qwen3.8-27B two-span head: 99.64% of committed ids are below 98,304, and the last 288 ids
// hold Qwen3.5's special and added tokens (end of turn, think and tool markers).
inline constexpr int64_t kTwoSpanHeadIds = 98304;
inline constexpr int64_t kTwoSpanTailIds = 288;

struct HeadVariant {
  std::string name;
  std::vector<exl3::ColumnSpan> spans;  // Ascending, disjoint, inside [0, vocab).

  // Columns the spans hold in total.
  int64_t columns() const;
  // Global token id of packed column `local`. REQUIRES: 0 <= local < columns().
  int32_t GlobalId(int64_t local) const;
};

// `full`: [0, V). A name in `named` (the checkpoint's own variants, DrafterConfig::head_variants):
// its span list. `two-span` otherwise: [0, min(98304, V)) and [V - 288, V), merged when they
// touch. Otherwise a span list "a:b,c:d" (half-open, ascending, disjoint). InvalidArgument naming
// the variant for an unknown name, a malformed list, or spans outside [0, vocab).
absl::StatusOr<HeadVariant> MakeHeadVariant(const std::string& spec, int64_t vocab,
                                            const std::map<std::string, std::string>& named = {});

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_DRAFTER_HEAD_VARIANT_H_
