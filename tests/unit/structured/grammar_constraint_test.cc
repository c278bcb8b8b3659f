#include "services/structured/grammar_constraint.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "services/structured/prefix_matcher.h"
#include "services/structured/utf8_prefix.h"

namespace twinspan::structured {
namespace {

constexpr uint32_t kEos = 9;

// A toy vocabulary: single bytes, a few merges, a UTF-8 lead byte alone, and the EOS id without
// bytes.
std::shared_ptr<const VocabTrie> Trie() {
  std::vector<std::optional<std::string>> bytes = {"{",    "}",    "\"", "a",   "ab",
                                                   "\"a",  ":",    "1",  "12",  std::nullopt,
                                                   "\xc3", "\xa9", " ",  "b\"", "}}"};
  return std::make_shared<VocabTrie>(bytes);
}

// The brute-force mask: every id whose bytes keep the output a UTF-8 prefix of the language.
engine::TokenMask BruteForce(const PrefixMatcher& m, const VocabTrie& trie,
                             const std::string& text) {
  engine::TokenMask mask;
  mask.Reset(trie.vocab_size());
  for (uint32_t id = 0; id < static_cast<uint32_t>(trie.vocab_size()); ++id) {
    std::optional<std::string_view> b = trie.bytes(id);
    if (!b.has_value()) continue;
    Utf8Prefix utf8;
    if (!utf8.Add(text + std::string(*b))) continue;
    if (*m.IsViablePrefix(text + std::string(*b))) mask.Allow(id);
  }
  Utf8Prefix utf8;
  if (utf8.Add(text) && utf8.at_boundary() && *m.IsComplete(text)) mask.Allow(kEos);
  return mask;
}

TEST(GrammarConstraintTest, MaskEqualsBruteForceAlongAnOutput) {
  auto trie = Trie();
  GrammarCompiler compiler(trie, {kEos});
  const GrammarSpec spec{
      GrammarKind::kJsonSchema,
      R"({"type":"object","properties":{"a":{"type":"string"}},"required":["a"]})"};
  auto constraint = compiler.Compile(spec);
  ASSERT_TRUE(constraint.ok()) << constraint.status();
  auto matcher = PrefixMatcher::Compile(*PatternOf(spec));
  ASSERT_TRUE(matcher.ok());
  // {"a":"ab\xc3\xa9"}  then EOS
  const std::vector<uint32_t> path = {0, 5, 2, 6, 2, 4, 10, 11, 2, 1, kEos};
  std::string text;
  for (uint32_t id : path) {
    engine::TokenMask mask;
    ASSERT_TRUE((*constraint)->AllowedNext(&mask).ok());
    EXPECT_EQ(mask.words, BruteForce(**matcher, *trie, text).words) << "after " << text;
    EXPECT_TRUE(mask.allows(id)) << id << " after " << text;
    ASSERT_TRUE((*constraint)->Advance(id).ok()) << id;
    if (id != kEos) text += std::string(*trie->bytes(id));
  }
  engine::TokenMask after_end;
  ASSERT_TRUE((*constraint)->AllowedNext(&after_end).ok());
  EXPECT_TRUE(after_end.empty());
}

TEST(GrammarConstraintTest, RefusesIdsOutsideTheLanguageAndEarlyEnds) {
  GrammarCompiler compiler(Trie(), {kEos});
  auto c = compiler.Compile({GrammarKind::kRegex, "a+b\""});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE((*c)->Advance(kEos).ok());  // not complete yet
  EXPECT_FALSE((*c)->Advance(7).ok());     // "1"
  EXPECT_FALSE((*c)->Advance(11).ok());    // a lone continuation byte
  ASSERT_TRUE((*c)->Advance(3).ok());
  auto fork = (*c)->Clone();
  ASSERT_TRUE((*c)->Advance(13).ok());  // b"
  ASSERT_TRUE((*c)->Advance(kEos).ok());
  // The fork kept its own state.
  engine::TokenMask mask;
  ASSERT_TRUE(fork->AllowedNext(&mask).ok());
  EXPECT_FALSE(mask.allows(kEos));
  EXPECT_TRUE(mask.allows(13));
  EXPECT_TRUE(mask.allows(4));  // ab
}

TEST(GrammarConstraintTest, ExtraEndIdsAndBadSpecs) {
  GrammarCompiler compiler(Trie(), {kEos});
  auto c = compiler.Compile({GrammarKind::kRegex, "1"}, {14});
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->Advance(7).ok());
  engine::TokenMask mask;
  ASSERT_TRUE((*c)->AllowedNext(&mask).ok());
  EXPECT_TRUE(mask.allows(kEos));
  EXPECT_TRUE(mask.allows(14));
  EXPECT_FALSE(mask.allows(7));
  EXPECT_FALSE(compiler.Compile({GrammarKind::kRegex, ""}).ok());
  EXPECT_FALSE(compiler.Compile({GrammarKind::kRegex, "(a"}).ok());
  EXPECT_FALSE(compiler.Compile({GrammarKind::kJsonSchema, "[]"}).ok());
  EXPECT_FALSE(compiler.Compile({GrammarKind::kGbnf, "x ::= \"a\""}).ok());
}

}  // namespace
}  // namespace twinspan::structured
