#include "services/structured/gbnf_regex.h"

#include <string>

#include "gtest/gtest.h"
#include "services/structured/prefix_matcher.h"

namespace twinspan::structured {
namespace {

std::unique_ptr<PrefixMatcher> MatcherFor(const std::string& grammar) {
  absl::StatusOr<std::string> pattern = GbnfToRegex(grammar);
  EXPECT_TRUE(pattern.ok()) << pattern.status();
  if (!pattern.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<PrefixMatcher>> m = PrefixMatcher::Compile(*pattern);
  EXPECT_TRUE(m.ok()) << m.status() << " for " << *pattern;
  return m.ok() ? *std::move(m) : nullptr;
}

TEST(GbnfRegexTest, RecursiveRulesClassesAndRepetition) {
  auto m = MatcherFor(R"(# nested lists of small numbers
root  ::= list
list  ::= "[" ( item ("," item)* )? "]"
item  ::= num | list
num   ::= [1-9] [0-9]{0,2} | "0"
)");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(*m->IsComplete("[]"));
  EXPECT_TRUE(*m->IsComplete("[1,[20,[]],999]"));
  EXPECT_FALSE(*m->IsComplete("[1000]"));
  EXPECT_FALSE(*m->IsComplete("[01]"));
  EXPECT_TRUE(*m->IsViablePrefix("[1,[2"));
  EXPECT_FALSE(*m->IsViablePrefix("[1,]"));
}

TEST(GbnfRegexTest, MultiLineAlternativesEscapesAndNegatedClasses) {
  auto m = MatcherFor(
      "root ::= greeting\n  | \"\\x41\" [^\"\\n]* \"\\u00e9\"\n"
      "greeting ::= (\"hi\" | \"hello\") \" \" name\nname ::= [a-z]+ .\n");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(*m->IsComplete("hello bob!"));
  EXPECT_TRUE(*m->IsComplete("hi x\xc3\xa9"));
  EXPECT_TRUE(*m->IsComplete("Aany \xe2\x82\xac text\xc3\xa9"));
  EXPECT_FALSE(*m->IsComplete("Aline\nbreak\xc3\xa9"));
}

TEST(GbnfRegexTest, RefusesBadGrammars) {
  for (const char* g : {"item ::= \"a\"\n",                  // no root
                        "root ::= missing\n",                // undefined rule
                        "root ::= \"a\"\nroot ::= \"b\"\n",  // duplicate
                        "root ::= \"a\n",                    // unclosed literal
                        "root ::= [\xce\xb1-\xcf\x89]\n",    // non-ASCII range
                        "root ::= (\"a\"\n", "root = \"a\"\n"}) {
    absl::StatusOr<std::string> r = GbnfToRegex(g);
    ASSERT_FALSE(r.ok()) << g;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << g;
  }
  // Characters that are no Unicode scalar value: surrogates (escaped or raw), overlongs, stray
  // continuation bytes and truncated sequences.
  for (const char* g :
       {"root ::= \"\\uD800\"\n", "root ::= \"\\U00110000\"\n", "root ::= [\\uDFFF]\n",
        "root ::= \"\xed\xa0\x80\"\n", "root ::= \"\xc0\xaf\"\n", "root ::= \"\x80\"\n",
        "root ::= \"\xe2\x82\"\n"}) {
    absl::StatusOr<std::string> bad = GbnfToRegex(g);
    ASSERT_FALSE(bad.ok()) << g << " gave " << *bad;
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << g;
  }
  absl::StatusOr<std::string> r = GbnfToRegex("root ::= missing\n");
  EXPECT_NE(r.status().message().find("missing"), std::string::npos) << r.status();
  // Left recursion translates; PCRE2 finds the call that loops when it first matches, which
  // Compile does on every first byte.
  absl::StatusOr<std::string> left = GbnfToRegex("root ::= root \"a\" | \"a\"\n");
  ASSERT_TRUE(left.ok());
  auto refused = PrefixMatcher::Compile(*left);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinspan::structured
