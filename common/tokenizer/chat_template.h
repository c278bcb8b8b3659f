// A model's chat template (tokenizer_config.json "chat_template", or chat_template.jinja) rendered
// byte for byte as transformers' apply_chat_template(tokenize=False) renders it.
#ifndef TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_H_
#define TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tokenizer/chat_template/jinja_template.h"
#include "nlohmann/json.hpp"

namespace twinspan::tokenizer {

struct ChatOptions {
  // Appends the assistant turn header (e.g. "<|im_start|>assistant\n").
  bool add_generation_prompt = true;
  // Qwen3's switch; nullopt leaves `enable_thinking` undefined in the template (thinking on).
  std::optional<bool> enable_thinking;
  // Tool schemas (a JSON array) or null for none; key order is kept, as `tojson` prints it.
  nlohmann::ordered_json tools = nullptr;
  // Further template variables (e.g. "documents"); each key becomes a global.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  // The render's work budget (see jinja::Template::Render): a template that loops without end
  // fails with an error naming it instead of holding a request thread.
  int64_t max_render_steps = jinja::kDefaultMaxRenderSteps;
};

// Immutable after Open; Render may run on many threads at once.
class ChatTemplate {
 public:
  // Reads `dir`/tokenizer_config.json ("chat_template": a string, or a list of {name, template}
  // where "default" is used) or else `dir`/chat_template.jinja, plus the special-token strings
  // (bos_token, eos_token, ...) transformers passes to the template.
  // Errors: NotFound when no template exists; InvalidArgument for malformed JSON or template
  // syntax.
  static absl::StatusOr<ChatTemplate> Open(const std::string& dir);
  // Builds from template source; `special_tokens` become globals (e.g. {"eos_token",
  // "<|im_end|>"}).
  static absl::StatusOr<ChatTemplate> FromSource(
      std::string_view source,
      std::vector<std::pair<std::string, std::string>> special_tokens = {});

  // Renders `messages` (a JSON array of {role, content, ...}; key order is kept).
  // Errors: InvalidArgument when messages is not an array, when the template raises
  // (raise_exception) or hits a type error; the message names the template line.
  absl::StatusOr<std::string> Render(const nlohmann::ordered_json& messages,
                                     const ChatOptions& options) const;

  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const jinja::Template> template_;
  std::vector<std::pair<std::string, jinja::Value>> special_tokens_;
};

}  // namespace twinspan::tokenizer

#endif  // TWINSPAN_COMMON_TOKENIZER_CHAT_TEMPLATE_H_
