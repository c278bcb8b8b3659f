// JSON Schema -> a PCRE2 pattern (byte mode) whose full matches are JSON texts the schema accepts:
// the translation Outlines and llama.cpp make, kept to the keywords it can honour exactly.
//
// Supported: type (one or a list), enum, const, string (minLength, maxLength: characters), integer,
// number, boolean, null, object (properties in the schema's order, required; no other properties
// are generated), array (items, minItems, maxItems), anyOf / oneOf (as anyOf), $ref to #/$defs/...
// or #/definitions/... (recursion included), and {} or true for any JSON value. Annotations
// (title, description, default, examples, $schema, $id, additionalProperties, strict) are ignored.
// Any other keyword is refused by name rather than silently not enforced.
//
// Whitespace: none at the top level; after '{', '[', ',' and ':' and before '}' and ']' either
// nothing, one space, or a newline and up to 20 spaces or tabs (pretty-printing, bounded so a
// model cannot stall in whitespace).
#ifndef TWINSPAN_SERVICES_STRUCTURED_JSON_SCHEMA_REGEX_H_
#define TWINSPAN_SERVICES_STRUCTURED_JSON_SCHEMA_REGEX_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace twinspan::structured {

// The pattern for the schema in `schema_json` (JSON text). InvalidArgument naming the JSON
// pointer and keyword for malformed JSON, a bad value or an unsupported keyword; ResourceExhausted
// for a schema nested deeper than 32 levels.
absl::StatusOr<std::string> JsonSchemaToRegex(std::string_view schema_json);

// A pattern matching `bytes` literally (PCRE2 metacharacters escaped, other bytes as \xHH).
std::string RegexLiteral(std::string_view bytes);

}  // namespace twinspan::structured

#endif  // TWINSPAN_SERVICES_STRUCTURED_JSON_SCHEMA_REGEX_H_
