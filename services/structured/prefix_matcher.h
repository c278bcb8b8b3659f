// A PCRE2 pattern matched against whole outputs, with partial matching: tells whether a string is
// a prefix of some string the pattern matches in full, and whether it is one itself. Matching runs
// on bytes (no PCRE2_UTF): "." and classes match single bytes; Utf8Prefix keeps outputs UTF-8.
#ifndef TWINSPAN_SERVICES_STRUCTURED_PREFIX_MATCHER_H_
#define TWINSPAN_SERVICES_STRUCTURED_PREFIX_MATCHER_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace twinspan::structured {

struct PrefixMatcherLimits {
  size_t max_pattern_bytes = 256 << 10;
  // Backtracking steps per match (PCRE2's match limit): a pathological pattern fails the
  // request with ResourceExhausted instead of stalling the engine thread.
  uint32_t match_limit = 1000000;
  uint32_t depth_limit = 10000;
};

// Immutable after Compile; thread-safe (each call uses match data of its own).
class PrefixMatcher {
 public:
  // Compiles `pattern` anchored at the start and at the end of the subject, JIT-compiled for
  // complete and partial matching. InvalidArgument naming the offset and PCRE2's message for a
  // pattern that does not compile; ResourceExhausted over max_pattern_bytes.
  static absl::StatusOr<std::unique_ptr<PrefixMatcher>> Compile(
      std::string_view pattern, const PrefixMatcherLimits& limits = {});
  ~PrefixMatcher();
  PrefixMatcher(const PrefixMatcher&) = delete;
  PrefixMatcher& operator=(const PrefixMatcher&) = delete;

  // True when some continuation of `text` (possibly none) matches in full.
  // ResourceExhausted when the match limit is hit.
  absl::StatusOr<bool> IsViablePrefix(std::string_view text) const;
  // True when `text` itself matches in full.
  absl::StatusOr<bool> IsComplete(std::string_view text) const;

 private:
  struct Impl;
  explicit PrefixMatcher(std::unique_ptr<Impl> impl);
  absl::StatusOr<int> Match(std::string_view text, uint32_t options) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace twinspan::structured

#endif  // TWINSPAN_SERVICES_STRUCTURED_PREFIX_MATCHER_H_
