// A compiled Unicode regular expression (PCRE2 with UTF and UCP, JIT when available) that finds
// matches the way the Hugging Face tokenizers' Oniguruma patterns do.
#ifndef TWINSPAN_COMMON_TOKENIZER_REGEX_H_
#define TWINSPAN_COMMON_TOKENIZER_REGEX_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace twinspan::tokenizer {

// Half-open byte range [begin, end) of one match.
using MatchSpan = std::pair<size_t, size_t>;

// Thread-safe after construction: FindAll may run on many threads at once.
class Regex {
 public:
  // Compiles an Oniguruma-syntax pattern as the tokenizers library writes them. `\s` and `\S` are
  // rewritten to Oniguruma's Unicode whitespace set (PCRE2 would also count U+180E).
  // Errors: InvalidArgument with PCRE2's message and offset; Unimplemented for `\S` inside a class.
  static absl::StatusOr<Regex> Compile(std::string_view pattern);
  // A pattern that matches `literal` exactly.
  static absl::StatusOr<Regex> CompileLiteral(std::string_view literal);

  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  ~Regex();

  // Appends every non-overlapping match in `text`, left to right; an empty match advances one code
  // point. REQUIRES: text is valid UTF-8 (not re-checked).
  // Errors: ResourceExhausted when PCRE2 hits its match or stack limits.
  absl::Status FindAll(std::string_view text, std::vector<MatchSpan>* matches) const;
  // The same matches, handed to `visit` one by one as they are found.
  absl::Status ForEachMatch(std::string_view text,
                            absl::FunctionRef<void(size_t, size_t)> visit) const;

 private:
  struct Compiled;
  explicit Regex(std::unique_ptr<Compiled> compiled);
  std::unique_ptr<Compiled> compiled_;
};

// The pattern after the `\s` / `\S` rewrite (exposed for tests).
absl::StatusOr<std::string> TranslateOnigurumaPattern(std::string_view pattern);

}  // namespace twinspan::tokenizer

#endif  // TWINSPAN_COMMON_TOKENIZER_REGEX_H_
