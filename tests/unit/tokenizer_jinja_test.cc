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

absl::StatusOr<std::string> Render(const std::string& source,
                                   int64_t max_steps = kDefaultMaxRenderSteps) {
  absl::StatusOr<Template> t = Template::Parse(source);
  if (!t.ok()) return t.status();
  return t->Render({}, max_steps);
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

// A template is a model file: one that loops forever, overflows, nests or grows without bound must
// fail quickly with an error naming the limit, never hang, crash or exhaust memory.
TEST(TokenizerJinjaTest, HostileTemplatesHitNamedLimits) {
  const auto expect_error = [](const std::string& source, const std::string& fragment,
                               int64_t max_steps = 300000) {
    absl::StatusOr<std::string> out = Render(source, max_steps);
    ASSERT_FALSE(out.ok()) << source;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
    EXPECT_NE(std::string(out.status().message()).find(fragment), std::string::npos)
        << source << "\n"
        << out.status();
  };
  const std::string deep_parens = std::string(2000, '(') + "1" + std::string(2000, ')');
  std::string long_chain = "{{ 1";
  for (int i = 0; i < 100000; ++i) long_chain += "+1";
  long_chain += " }}";
  expect_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
               "limit of 300000 steps");
  expect_error("{{ range(100001) | length }}", "limit 100000 items");
  expect_error("{{ (('x' * 1000000) * 1000) | length }}", "larger than the limit");
  expect_error(
      "{% set ns = namespace(s='x' * 33554433) %}{% for i in range(2) %}"
      "{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
      "result of '~' would be larger than the limit", kDefaultMaxRenderSteps);
  expect_error("{{ ('x' * 1000000) | replace('x', 'y' * 1000) }}", "replace: result larger");
  expect_error(
      "{% set ns = namespace(x=1) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}"
      "{% endfor %}",
      "nested deeper than 128");
  expect_error("{% set ns = namespace(x=1) %}{% set ns.me = ns %}", "cannot store a namespace");
  expect_error("{% set ns = namespace(x=1) %}{{ ns | tojson }}", "not JSON serializable");
  expect_error("{{ " + deep_parens + " }}", "nested deeper than 256");
  expect_error(long_chain, "nested deeper than 256");
  expect_error("{{ " + std::string(3000, '-') + "1 }}", "nested deeper than 256");
  expect_error("{{ 9223372036854775807 + 1 }}", "integer overflow");
  expect_error("{{ -9223372036854775807 - 2 }}", "integer overflow");
  expect_error("{{ 3 ** 100 }}", "integer overflow");
  expect_error("{{ (-9223372036854775807 - 1) // -1 }}", "integer overflow");
  expect_error("{{ -(-9223372036854775807 - 1) }}", "integer overflow");
  expect_error("{{ (-9223372036854775807 - 1) | abs }}", "integer overflow");
  expect_error("{{ 1e300 | int }}", "does not fit in 64 bits");
  // Within the limits, the same operations still give Python's answers.
  absl::StatusOr<std::string> out = Render(
      "{{ 2 ** 62 }}|{{ 'abc'[1::9223372036854775807] }}|{{ range(5, 20, 7) | list }}|"
      "{{ range(9223372036854775800, 9223372036854775807, 3) | length }}|{{ '' * 1000000000 }}|"
      "{{ (-9223372036854775807 - 1) % -1 }}");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "4611686018427387904|b|[5, 12, 19]|3||0");
}

TEST(TokenizerJinjaTest, RenderStepBudgetIsTheCallersChoice) {
  absl::StatusOr<tokenizer::ChatTemplate> chat = tokenizer::ChatTemplate::FromSource(
      "{% for m in messages %}{% for i in range(1000) %}{% endfor %}{{ m.content }}{% endfor %}");
  ASSERT_TRUE(chat.ok()) << chat.status();
  const auto messages = nlohmann::ordered_json::parse(R"([{"content": "a"}, {"content": "b"}])");
  tokenizer::ChatOptions options;
  absl::StatusOr<std::string> out = chat->Render(messages, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "ab");
  options.max_render_steps = 1500;
  out = chat->Render(messages, options);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(std::string(out.status().message()).find("limit of 1500 steps"), std::string::npos)
      << out.status();
  // Request JSON nested past the value depth is refused before rendering, not on the stack.
  nlohmann::ordered_json deep = "x";
  for (int i = 0; i < 1000; ++i) {
    nlohmann::ordered_json outer = nlohmann::ordered_json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  nlohmann::ordered_json message = nlohmann::ordered_json::object();
  message["content"] = std::move(deep);
  nlohmann::ordered_json deep_messages = nlohmann::ordered_json::array();
  deep_messages.push_back(std::move(message));
  out = chat->Render(deep_messages, tokenizer::ChatOptions());
  ASSERT_FALSE(out.ok());
  EXPECT_NE(std::string(out.status().message()).find("nested deeper than 128"), std::string::npos)
      << out.status();
}

TEST(TokenizerJinjaTest, RenderIsThreadSafeAndRepeatable) {
  absl::StatusOr<Template> t = Template::Parse("{% for m in messages %}{{ m }};{% endfor %}");
  ASSERT_TRUE(t.ok());
  const Value messages =
      *Value::FromJson(nlohmann::ordered_json::parse(R"(["a", {"b": 1}, [2.5, null]])"));
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
