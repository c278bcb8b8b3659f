#include "services/structured/prefix_matcher.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace twinspan::structured {
namespace {

std::string Pcre2Message(int code) {
  PCRE2_UCHAR buffer[256];
  const int n = pcre2_get_error_message(code, buffer, sizeof(buffer));
  return n < 0 ? absl::StrCat("PCRE2 error ", code) : std::string(reinterpret_cast<char*>(buffer));
}

}  // namespace

struct PrefixMatcher::Impl {
  pcre2_code* code = nullptr;
  pcre2_match_context* context = nullptr;
  ~Impl() {
    pcre2_match_context_free(context);
    pcre2_code_free(code);
  }
};

PrefixMatcher::PrefixMatcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PrefixMatcher::~PrefixMatcher() = default;

absl::StatusOr<std::unique_ptr<PrefixMatcher>> PrefixMatcher::Compile(
    std::string_view pattern, const PrefixMatcherLimits& limits) {
  if (pattern.size() > limits.max_pattern_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("structured output: the pattern has ",
                                                     pattern.size(), " bytes (limit ",
                                                     limits.max_pattern_bytes, ")"));
  }
  // The pattern must compile on its own, so wrapping it cannot change how it groups ("a)|(b").
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* alone = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), 0,
                                    &error, &offset, nullptr);
  if (alone == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("structured output: the pattern does not compile at offset ", offset, ": ",
                     Pcre2Message(error)));
  }
  pcre2_code_free(alone);
  // \z after the whole pattern: a full match must end at the end of the output.
  const std::string anchored = absl::StrCat("(?:", std::string(pattern), ")\\z");
  auto impl = std::make_unique<Impl>();
  impl->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(anchored.data()), anchored.size(),
                             PCRE2_ANCHORED | PCRE2_DOLLAR_ENDONLY, &error, &offset, nullptr);
  if (impl->code == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "structured output: the anchored pattern does not compile: ", Pcre2Message(error)));
  }
  // JIT is an optimisation only: without it PCRE2 interprets the same pattern.
  pcre2_jit_compile(impl->code, PCRE2_JIT_COMPLETE | PCRE2_JIT_PARTIAL_HARD);
  impl->context = pcre2_match_context_create(nullptr);
  if (impl->context == nullptr) return absl::ResourceExhaustedError("PCRE2: no match context");
  pcre2_set_match_limit(impl->context, limits.match_limit);
  pcre2_set_depth_limit(impl->context, limits.depth_limit);
  auto matcher = std::unique_ptr<PrefixMatcher>(new PrefixMatcher(std::move(impl)));
  // A rule that calls itself before consuming input only fails when matched: try every first
  // byte now, so such a pattern is refused here rather than in the middle of a stream.
  for (int byte = 0; byte < 256; ++byte) {
    const char c = static_cast<char>(byte);
    absl::StatusOr<bool> probe = matcher->IsViablePrefix(std::string_view(&c, 1));
    if (!probe.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("structured output: the pattern fails on a first byte (a rule that calls "
                       "itself before consuming input?): ",
                       probe.status().message()));
    }
  }
  return matcher;
}

absl::StatusOr<int> PrefixMatcher::Match(std::string_view text, uint32_t options) const {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  if (data == nullptr) return absl::ResourceExhaustedError("PCRE2: no match data");
  const int rc = pcre2_match(impl_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0,
                             options, data, impl_->context);
  pcre2_match_data_free(data);
  if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT ||
      rc == PCRE2_ERROR_JIT_STACKLIMIT) {
    return absl::ResourceExhaustedError(absl::StrCat("structured output: matching ", text.size(),
                                                     " bytes hit a limit: ", Pcre2Message(rc)));
  }
  if (rc == PCRE2_ERROR_RECURSELOOP) {
    return absl::InvalidArgumentError(absl::StrCat(
        "structured output: a rule calls itself before consuming input: ", Pcre2Message(rc)));
  }
  if (rc < 0 && rc != PCRE2_ERROR_NOMATCH && rc != PCRE2_ERROR_PARTIAL) {
    return absl::InternalError(absl::StrCat("structured output: ", Pcre2Message(rc)));
  }
  return rc;
}

absl::StatusOr<bool> PrefixMatcher::IsViablePrefix(std::string_view text) const {
  // Hard partial matching reports PARTIAL whenever a path of the pattern consumed all of `text`
  // (\z at the end always asks for more), so PARTIAL is exactly "a prefix of the language".
  absl::StatusOr<int> rc = Match(text, PCRE2_PARTIAL_HARD);
  if (!rc.ok()) return rc.status();
  if (*rc == PCRE2_ERROR_PARTIAL || *rc >= 0) return true;
  if (!text.empty()) return false;
  // PCRE2 reports no partial match for an empty subject: the empty output is a prefix of
  // anything, unless the pattern matches nothing at all.
  return true;
}

absl::StatusOr<bool> PrefixMatcher::IsComplete(std::string_view text) const {
  absl::StatusOr<int> rc = Match(text, 0);
  if (!rc.ok()) return rc.status();
  return *rc >= 0;
}

}  // namespace twinspan::structured
