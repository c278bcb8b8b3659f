// Parses Jinja tokens into a syntax tree: if/elif/else, for (with else, loop filters), set (names,
// namespace attributes, blocks), macro, break/continue, generation; expressions with Jinja2's
// precedence, filters, tests, calls, attributes, subscripts and slices, list/tuple/dict literals
// and conditional expressions.
#ifndef TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_PARSER_H_
#define TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_PARSER_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "common/tokenizer/chat_template/jinja_ast.h"

namespace twinspan::jinja {

// Errors: InvalidArgument naming the line and what was expected, for syntax errors and for tags
// outside the subset (e.g. extends, include, import, call blocks, raw).
absl::StatusOr<Body> Parse(std::string_view source);

}  // namespace twinspan::jinja

#endif  // TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_PARSER_H_
