// Jinja's filters, tests, global functions and the Python str/dict methods templates call, with
// Python semantics (code-point indexing and slicing, str.split/strip rules, json.dumps).
#ifndef TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_BUILTINS_H_
#define TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_BUILTINS_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/tokenizer/chat_template/jinja_value.h"

namespace twinspan::jinja {

// Applies filter `name` to `value` (args excludes the value). Errors: InvalidArgument for an
// unknown filter or bad arguments.
absl::StatusOr<Value> ApplyFilter(const std::string& name, const Value& value, Args& args);

// Applies test `name` (as in `value is name(args)`). Errors: InvalidArgument for an unknown test.
absl::StatusOr<bool> ApplyTest(const std::string& name, const Value& value, Args& args);

// `obj.name`: dict keys, namespace attributes, and the str / dict methods as bound functions.
// Returns Undefined when there is no such attribute. Errors: InvalidArgument when obj is Undefined.
absl::StatusOr<Value> GetAttribute(const Value& obj, const std::string& name);

// `obj[key]`: dict keys, list and str indexes (negative from the end). Undefined when missing.
// Errors: InvalidArgument when obj is Undefined or cannot be subscripted.
absl::StatusOr<Value> GetItem(const Value& obj, const Value& key);

// `obj[start:stop:step]` on lists and strings (null parts are Undefined values).
absl::StatusOr<Value> GetSlice(const Value& obj, const Value& start, const Value& stop,
                               const Value& step);

// The items a for loop visits: list items, dict keys, str characters, nothing for Undefined.
// Errors: InvalidArgument for values that are not iterable.
absl::StatusOr<List> Iterate(const Value& value);

// Globals every template sees: namespace, range, dict, raise_exception, strftime_now.
Value MakeGlobalFunction(const std::string& name);

// Number of code points in a UTF-8 string.
size_t CodePointCount(const std::string& s);

}  // namespace twinspan::jinja

#endif  // TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_BUILTINS_H_
