#include <fstream>
#include <sstream>
#include <string>

#include "common/tokenizer/chat_template.h"
#include "common/tokenizer/chat_template/jinja_template.h"
#include "common/tokenizer/chat_template/jinja_value.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace twinspan::jinja {
namespace {

absl::StatusOr<std::string> Render(const std::string& source) {
  absl::StatusOr<Template> t = Template::Parse(source);
  if (!t.ok()) return t.status();
  return t->Render({});
}

// Each case's expected output was rendered by Jinja2 3.1 configured as transformers does.
TEST(TokenizerJinjaTest, MatchesJinja2OnRecordedCases) {
  std::ifstream in(TWINSPAN_JINJA_CASES, std::ios::binary);
  ASSERT_TRUE(in) << TWINSPAN_JINJA_CASES;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const nlohmann::json cases = nlohmann::json::parse(buffer.str());
  ASSERT_GE(cases.size(), 20u);
  for (const auto& c : cases) {
    const std::string source = c["template"].get<std::string>();
    absl::StatusOr<std::string> out = Render(source);
    ASSERT_TRUE(out.ok()) << source << "\n" << out.status();
    EXPECT_EQ(*out, c["expected"].get<std::string>()) << source;
  }
}

TEST(TokenizerJinjaTest, PythonFloatRepr) {
  EXPECT_EQ(PythonFloatRepr(1.0), "1.0");
  EXPECT_EQ(PythonFloatRepr(0.1), "0.1");
  EXPECT_EQ(PythonFloatRepr(1e16), "1e+16");
  EXPECT_EQ(PythonFloatRepr(1e15), "1000000000000000.0");
  EXPECT_EQ(PythonFloatRepr(1e-5), "1e-05");
  EXPECT_EQ(PythonFloatRepr(-0.0), "-0.0");
  EXPECT_EQ(PythonFloatRepr(123456789012345678.0), "1.2345678901234568e+17");
}

TEST(TokenizerJinjaTest, SyntaxErrorsNameTheLine) {
  const auto expect_error = [](const std::string& source, const std::string& fragment) {
    absl::StatusOr<std::string> out = Render(source);
    ASSERT_FALSE(out.ok()) << source;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(out.status().message()).find(fragment), std::string::npos)
        << out.status();
  };
  expect_error("a\n{% if x %}", "missing {% endif %}");
  expect_error("a\nb\n{{ 1 + }}", "line 3");
  expect_error("{% include 'x' %}", "not supported");
  expect_error("{{ 'unterminated }}", "unterminated string");
  expect_error("{% for x in y %}{% endif %}", "endif");
  expect_error("{{ x", "unterminated tag");
}

TEST(TokenizerJinjaTest, RuntimeErrorsAreStatusesNotCrashes) {
  const auto expect_error = [](const std::string& source, const std::string& fragment) {
    absl::StatusOr<std::string> out = Render(source);
    ASSERT_FALSE(out.ok()) << source;
    EXPECT_NE(std::string(out.status().message()).find(fragment), std::string::npos)
        << out.status();
  };
  expect_error("{{ raise_exception('boom') }}", "boom");
  expect_error("{{ 'a' + 1 }}", "unsupported operand");
  expect_error("{{ missing.attr }}", "undefined");
  expect_error("{{ missing + 1 }}", "undefined");
  expect_error("{{ [1] | nosuchfilter }}", "unknown filter");
  expect_error("{{ 1 is nosuchtest }}", "unknown test");
  expect_error("{{ 1 / 0 }}", "division by zero");
  expect_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "nested too deeply");
  expect_error("{% set x = 1 %}{% set x.y = 2 %}", "namespace");
  expect_error("{% for x in 5 %}{% endfor %}", "not iterable");
  expect_error("{{ none.x.y }}", "undefined");
}

TEST(TokenizerJinjaTest, RenderIsThreadSafeAndRepeatable) {
  absl::StatusOr<Template> t = Template::Parse("{% for m in messages %}{{ m }};{% endfor %}");
  ASSERT_TRUE(t.ok());
  const Value messages =
      Value::FromJson(nlohmann::ordered_json::parse(R"(["a", {"b": 1}, [2.5, null]])"));
  absl::StatusOr<std::string> first = t->Render({{"messages", messages}});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, "a;{'b': 1};[2.5, None];");
  absl::StatusOr<std::string> second = t->Render({{"messages", messages}});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*first, *second);
}

TEST(TokenizerJinjaTest, ChatTemplateOptionsReachTheTemplate) {
  absl::StatusOr<tokenizer::ChatTemplate> chat = tokenizer::ChatTemplate::FromSource(
      "{{ eos_token }}|{{ enable_thinking is defined }}|{{ add_generation_prompt }}|{{ tools | "
      "tojson }}|{{ "
      "messages[0].content }}|{{ custom }}",
      {{"eos_token", "<|im_end|>"}});
  ASSERT_TRUE(chat.ok()) << chat.status();
  tokenizer::ChatOptions options;
  options.tools = nlohmann::ordered_json::parse(R"([{"z": 1, "a": "é"}])");
  options.extra["custom"] = "yes";
  absl::StatusOr<std::string> out =
      chat->Render(nlohmann::ordered_json::parse(R"([{"content": "hi"}])"), options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "<|im_end|>|False|True|[{\"z\": 1, \"a\": \"é\"}]|hi|yes");
  options.enable_thinking = false;
  options.tools = nullptr;
  out = chat->Render(nlohmann::ordered_json::parse(R"([{"content": "hi"}])"), options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "<|im_end|>|True|True|null|hi|yes");
  EXPECT_FALSE(chat->Render(nlohmann::ordered_json::object(), options).ok());
  EXPECT_EQ(tokenizer::ChatTemplate::Open("/nonexistent").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace twinspan::jinja
