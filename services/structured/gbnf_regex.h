// A GBNF grammar (llama.cpp's notation) -> a PCRE2 pattern: each rule becomes a numbered group in
// a DEFINE block and each reference a subroutine call, so recursive rules stay context-free.
//
//   root   ::= object
//   object ::= "{" pair ("," pair)* "}"     # literals in quotes, with \n \t \" \\ \xHH \uHHHH
//   pair   ::= [a-z]+ ":" [0-9]{1,3}        # classes, ranges, [^...], . ; * + ? {m} {m,} {m,n}
//
// The root rule is `root`. Classes over ASCII match one character; a negated class also matches
// any non-ASCII character; a class may list non-ASCII characters but not ranges of them. Left
// recursion is refused (PCRE2 reports a call that could loop).
#ifndef TWINSPAN_SERVICES_STRUCTURED_GBNF_REGEX_H_
#define TWINSPAN_SERVICES_STRUCTURED_GBNF_REGEX_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace twinspan::structured {

// InvalidArgument naming the line and what is wrong: a syntax error, an undefined or duplicate
// rule, no root rule, a non-ASCII range.
absl::StatusOr<std::string> GbnfToRegex(std::string_view grammar);

}  // namespace twinspan::structured

#endif  // TWINSPAN_SERVICES_STRUCTURED_GBNF_REGEX_H_
