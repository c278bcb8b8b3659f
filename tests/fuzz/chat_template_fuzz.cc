// Fuzz target: chat-template rendering. The first byte picks the case: 0 and 1 render any JSON
// (an array of messages, or {"messages", "tools", "enable_thinking", "add_generation_prompt"})
// with the Qwen3.5-style test template (macros, tool calls, content parts) or the demo model's
// template; 2 renders fixed messages with the rest of the bytes as the template's source (a
// model file's template is outside input too). Each must render or return a Status that says
// why; nothing may crash, throw or hang.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "common/tokenizer/chat_template.h"
#include "nlohmann/json.hpp"

namespace {

using twinspan::tokenizer::ChatOptions;
using twinspan::tokenizer::ChatTemplate;

const ChatTemplate& Rich() {
  static const ChatTemplate chat = [] {
    std::ifstream in(TWINSPAN_FUZZ_RICH_TEMPLATE);
    std::stringstream source;
    source << in.rdbuf();
    auto t = ChatTemplate::FromSource(source.str(), {{"eos_token", "<|im_end|>"}});
    if (!t.ok()) std::abort();  // the committed template must parse
    return *std::move(t);
  }();
  return chat;
}

const ChatTemplate& Demo() {
  static const ChatTemplate chat = [] {
    auto t = ChatTemplate::Open(TWINSPAN_FUZZ_TOKENIZER_DIR);
    if (!t.ok()) std::abort();
    return *std::move(t);
  }();
  return chat;
}

// A smaller work budget than a server's: inputs that exhaust it stay fast enough to fuzz.
ChatOptions FuzzOptions() {
  ChatOptions options;
  options.max_render_steps = 100000;
  return options;
}

template <typename T>
void ExpectReason(const absl::StatusOr<T>& result) {
  if (!result.ok() && result.status().message().empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const int mode = data[0] % 3;
  if (mode == 2) {
    auto t = ChatTemplate::FromSource(rest, {{"eos_token", "<|im_end|>"}});
    ExpectReason(t);
    if (!t.ok()) return 0;
    static const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(
        R"([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"}, {"role": "user", "content": "more"}])");
    ExpectReason(t->Render(messages, FuzzOptions()));
    return 0;
  }
  nlohmann::ordered_json input =
      nlohmann::ordered_json::parse(rest, nullptr, /*allow_exceptions=*/false);
  if (input.is_discarded()) return 0;
  ChatOptions options = FuzzOptions();
  nlohmann::ordered_json messages = input;
  if (input.is_object()) {
    messages = input.value("messages", nlohmann::ordered_json());
    if (input.contains("tools")) options.tools = input["tools"];
    const auto thinking = input.find("enable_thinking");
    if (thinking != input.end() && thinking->is_boolean()) {
      options.enable_thinking = thinking->get<bool>();
    }
    const auto prompt = input.find("add_generation_prompt");
    if (prompt != input.end() && prompt->is_boolean()) {
      options.add_generation_prompt = prompt->get<bool>();
    }
  }
  ExpectReason((mode == 0 ? Rich() : Demo()).Render(messages, options));
  return 0;
}
