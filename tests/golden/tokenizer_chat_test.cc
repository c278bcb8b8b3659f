// Renders chat cases with our Jinja subset and compares byte for byte with Jinja2 (Debian's
// python3-jinja2 configured as transformers does); the reference renders come from ctest fixtures.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "common/tokenizer/chat_template.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/golden.h"

namespace twinspan::tokenizer {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

nlohmann::ordered_json ReadJson(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return nlohmann::ordered_json::parse(buffer.str(), nullptr, false);
}

ChatOptions OptionsFor(const nlohmann::ordered_json& c) {
  ChatOptions options;
  options.add_generation_prompt = c.value("add_generation_prompt", true);
  if (c.contains("enable_thinking")) options.enable_thinking = c["enable_thinking"].get<bool>();
  if (c.contains("tools")) options.tools = c["tools"];
  return options;
}

void CompareAll(const ChatTemplate& chat, const std::string& cases_path,
                const std::string& reference_path) {
  const nlohmann::ordered_json cases = ReadJson(cases_path);
  const nlohmann::ordered_json reference = ReadJson(reference_path);
  ASSERT_TRUE(cases.is_array()) << cases_path;
  ASSERT_TRUE(reference.is_array()) << reference_path;
  ASSERT_EQ(cases.size(), reference.size());
  int rendered = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    absl::StatusOr<std::string> text = chat.Render(cases[i]["messages"], OptionsFor(cases[i]));
    const nlohmann::ordered_json& expected = reference[i];
    if (expected["ok"].get<bool>()) {
      ASSERT_TRUE(text.ok()) << "case " << i << ": " << text.status();
      EXPECT_EQ(*text, expected["text"].get<std::string>()) << "case " << i;
      ++rendered;
    } else {
      EXPECT_FALSE(text.ok()) << "case " << i << " should fail like Jinja2 (" << expected["error"]
                              << ")";
      // The template's own raise_exception message must come through.
      const std::string error = expected["error"].get<std::string>();
      const std::string prefix = "TemplateError: ";
      if (!text.ok() && error.rfind(prefix, 0) == 0) {
        EXPECT_NE(std::string(text.status().message()).find(error.substr(prefix.size())),
                  std::string::npos)
            << text.status();
      }
    }
  }
  EXPECT_GE(rendered, 7);
}

TEST(TokenizerChatTest, Qwen3TemplateMatchesJinja2) {
  absl::StatusOr<ChatTemplate> chat =
      ChatTemplate::Open(twinspan::testing::GoldenPath("exl3_qwen3_tiny"));
  ASSERT_TRUE(chat.ok()) << chat.status();
  CompareAll(*chat, Env("TWINSPAN_CHAT_CASES"), Env("TWINSPAN_CHAT_REFERENCE_QWEN3"));
}

TEST(TokenizerChatTest, Qwen35StyleTemplateMatchesJinja2) {
  std::ifstream in(Env("TWINSPAN_CHAT_STYLE_TEMPLATE"), std::ios::binary);
  ASSERT_TRUE(in) << "TWINSPAN_CHAT_STYLE_TEMPLATE";
  std::ostringstream source;
  source << in.rdbuf();
  absl::StatusOr<ChatTemplate> chat = ChatTemplate::FromSource(source.str());
  ASSERT_TRUE(chat.ok()) << chat.status();
  CompareAll(*chat, Env("TWINSPAN_CHAT_STYLE_CASES"), Env("TWINSPAN_CHAT_REFERENCE_STYLE"));
}

}  // namespace
}  // namespace twinspan::tokenizer
