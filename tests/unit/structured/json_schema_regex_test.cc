#include "services/structured/json_schema_regex.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "services/structured/prefix_matcher.h"

namespace twinspan::structured {
namespace {

std::unique_ptr<PrefixMatcher> MatcherFor(const std::string& schema) {
  absl::StatusOr<std::string> pattern = JsonSchemaToRegex(schema);
  EXPECT_TRUE(pattern.ok()) << pattern.status();
  if (!pattern.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<PrefixMatcher>> m = PrefixMatcher::Compile(*pattern);
  EXPECT_TRUE(m.ok()) << m.status() << " for " << *pattern;
  return m.ok() ? *std::move(m) : nullptr;
}

bool Complete(const PrefixMatcher& m, const std::string& text) { return *m.IsComplete(text); }
bool Viable(const PrefixMatcher& m, const std::string& text) { return *m.IsViablePrefix(text); }

TEST(JsonSchemaRegexTest, ObjectWithRequiredAndOptionalMembers) {
  auto m = MatcherFor(R"({"type":"object","properties":{
      "name":{"type":"string","maxLength":5},"age":{"type":"integer"},
      "tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":2}},
      "required":["name","age"]})");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(Complete(*m, R"({"name":"bob","age":42})"));
  EXPECT_TRUE(Complete(*m, R"({"name": "bob", "age": -7, "tags": ["a","b"]})"));
  EXPECT_TRUE(Complete(*m, "{\n  \"name\": \"\xc3\xa9t\xc3\xa9\",\n  \"age\": 0\n}"));
  EXPECT_FALSE(Complete(*m, R"({"name":"bob"})"));                             // age required
  EXPECT_FALSE(Complete(*m, R"({"name":"toolong","age":1})"));                 // maxLength 5
  EXPECT_FALSE(Complete(*m, R"({"name":"b","age":1,"tags":["a","b","a"]})"));  // maxItems 2
  EXPECT_FALSE(Complete(*m, R"({"name":"b","age":01})"));                      // no leading zeros
  EXPECT_FALSE(Complete(*m, R"({"age":1,"name":"b"})"));                       // schema order
  EXPECT_TRUE(Viable(*m, R"({"name":"bo)"));
  EXPECT_TRUE(Viable(*m, R"({"name":"bob","age":4)"));
  EXPECT_FALSE(Viable(*m, R"({"nam3)"));
  EXPECT_FALSE(Viable(*m, R"( {)"));  // no whitespace before the value
}

TEST(JsonSchemaRegexTest, AllOptionalMembersTakeCommasOnlyBetweenPresentOnes) {
  auto m =
      MatcherFor(R"({"type":"object","properties":{"a":{"type":"null"},"b":{"type":"boolean"}}})");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(Complete(*m, "{}"));
  EXPECT_TRUE(Complete(*m, R"({"b":true})"));
  EXPECT_TRUE(Complete(*m, R"({"a":null,"b":false})"));
  EXPECT_FALSE(Complete(*m, R"({,"b":true})"));
  EXPECT_FALSE(Complete(*m, R"({"a":null,})"));
}

TEST(JsonSchemaRegexTest, NumbersStringsEscapesAndConst) {
  auto m = MatcherFor(R"({"type":"array","items":{"anyOf":[{"type":"number"},
      {"type":"string"},{"const":{"k":[1,2]}}]},"minItems":1})");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(Complete(*m, R"([1.5e-3, "a\"b\\c\u00e9\n", {"k":[1,2]}])"));
  EXPECT_FALSE(Complete(*m, "[]"));
  EXPECT_FALSE(Complete(*m, "[\"a\x01\"]"));  // control characters must be escaped
  EXPECT_FALSE(Complete(*m, R"(["\q"])"));
}

TEST(JsonSchemaRegexTest, AnyValueAndRecursiveRefs) {
  auto any = MatcherFor("{}");
  ASSERT_NE(any, nullptr);
  EXPECT_TRUE(Complete(*any, R"({"a":[1,{"b":null}],"c":"d"})"));
  EXPECT_FALSE(Complete(*any, R"({"a":[1,{"b":nul}]})"));
  auto tree = MatcherFor(R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object",
      "properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},
      "required":["v"]}}})");
  ASSERT_NE(tree, nullptr);
  EXPECT_TRUE(Complete(*tree, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4}]}]})"));
  EXPECT_FALSE(Complete(*tree, R"({"v":1,"kids":[{"w":2}]})"));
}

TEST(JsonSchemaRegexTest, RefusesWhatItCannotEnforce) {
  absl::StatusOr<std::string> r = JsonSchemaToRegex(R"({"type":"integer","minimum":3})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("\"minimum\""), std::string::npos) << r.status();
  r = JsonSchemaToRegex(R"({"type":"object","properties":{"a":{"type":"strin"}}})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/properties/a"), std::string::npos) << r.status();
  EXPECT_FALSE(JsonSchemaToRegex("{not json").ok());
  EXPECT_FALSE(JsonSchemaToRegex(R"({"$ref":"http://x/y"})").ok());
  EXPECT_FALSE(JsonSchemaToRegex(R"({"$ref":"#/$defs/missing"})").ok());
  EXPECT_FALSE(JsonSchemaToRegex(R"({"type":"object","properties":{},"required":["x"]})").ok());
  EXPECT_FALSE(JsonSchemaToRegex(R"({"type":"string","minLength":3,"maxLength":2})").ok());
  EXPECT_FALSE(JsonSchemaToRegex(R"({"type":"string","maxLength":-1})").ok());
  EXPECT_FALSE(JsonSchemaToRegex("false").ok());
  std::string deep = "{}";
  for (int i = 0; i < 40; ++i) deep = absl::StrCat(R"({"type":"array","items":)", deep, "}");
  r = JsonSchemaToRegex(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(PrefixMatcherTest, BadPatternsAndLimits) {
  auto bad = PrefixMatcher::Compile("a(b");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  // A pattern that only compiles when wrapped would change its grouping: refused.
  EXPECT_FALSE(PrefixMatcher::Compile("a)|(b").ok());
  PrefixMatcherLimits limits;
  limits.max_pattern_bytes = 4;
  auto big = PrefixMatcher::Compile("abcde", limits);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  limits = {};
  limits.match_limit = 1000;
  auto slow = PrefixMatcher::Compile("(?:a+)+b?", limits);
  ASSERT_TRUE(slow.ok());
  absl::StatusOr<bool> v = (*slow)->IsComplete(std::string(40, 'a') + "X");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(PrefixMatcherTest, EmptyOutputIsAViablePrefix) {
  auto m = PrefixMatcher::Compile("ab+");
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(*(*m)->IsViablePrefix(""));
  EXPECT_FALSE(*(*m)->IsComplete(""));
  EXPECT_TRUE(*(*m)->IsViablePrefix("abbb"));
  EXPECT_TRUE(*(*m)->IsComplete("abbb"));
  EXPECT_FALSE(*(*m)->IsViablePrefix("b"));
}

}  // namespace
}  // namespace twinspan::structured
