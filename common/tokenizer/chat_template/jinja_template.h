// A parsed Jinja template (the subset chat templates use) that renders with Jinja2's semantics as
// transformers configures them: trim_blocks, lstrip_blocks, loopcontrols, Undefined that errors
// when used beyond printing / testing / iterating.
#ifndef TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_TEMPLATE_H_
#define TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_TEMPLATE_H_

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tokenizer/chat_template/jinja_ast.h"
#include "common/tokenizer/chat_template/jinja_value.h"

namespace twinspan::jinja {

// The default work budget of one render; real chat templates use far less (docs/tokenizer.md).
inline constexpr int64_t kDefaultMaxRenderSteps = 10'000'000;

// Immutable after Parse; Render may run on many threads at once.
class Template {
 public:
  // Errors: InvalidArgument with the line for syntax errors and unsupported tags.
  static absl::StatusOr<Template> Parse(std::string_view source);

  // Renders with `variables` in the global scope (plus namespace, range, dict, raise_exception and
  // strftime_now). Errors: InvalidArgument naming the line for type errors, undefined values used
  // in operations, unknown filters/tests, raise_exception(...), runaway recursion, integer
  // overflow, values over kMaxValueBytes or kMaxValueDepth, and more than `max_steps` steps of
  // work (a step: one statement, expression or loop iteration, or 64 bytes of a value built).
  absl::StatusOr<std::string> Render(const std::vector<std::pair<std::string, Value>>& variables,
                                     int64_t max_steps = kDefaultMaxRenderSteps) const;

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace twinspan::jinja

#endif  // TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_JINJA_TEMPLATE_H_
