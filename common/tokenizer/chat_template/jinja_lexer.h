// Splits a Jinja template into text and tag tokens, applying whitespace control the way Jinja2 does
// with trim_blocks=True and lstrip_blocks=True (as transformers configures it), `{%-`/`-%}`,
// `{%+`, comments, newline normalization and the dropped final newline.
#ifndef TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_LEXER_H_
#define TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_LEXER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace twinspan::jinja {

struct Token {
  enum class Kind {
    kText,
    kVarBegin,    // {{
    kVarEnd,      // }}
    kBlockBegin,  // {%
    kBlockEnd,    // %}
    kName,
    kString,
    kInt,
    kFloat,
    kOp,
    kEof,
  };
  Kind kind;
  std::string text;  // text, name, operator, or the decoded string literal
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Errors: InvalidArgument with the line for an unterminated tag, comment or string, or a character
// that cannot start a token.
absl::StatusOr<std::vector<Token>> Lex(std::string_view source, const LexOptions& options = {});

}  // namespace twinspan::jinja

#endif  // TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_LEXER_H_
