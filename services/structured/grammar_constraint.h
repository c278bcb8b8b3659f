// Structured output for one model: compiles a request's JSON schema, regex or GBNF-like grammar
// into a PCRE2 PrefixMatcher and hands out engine::TokenConstraint states that walk the model's
// VocabTrie with it. PCRE2 does all matching (partial matching tells a viable prefix); what is
// ours is the translation of schemas and grammars into patterns and the walk over the vocabulary.
#ifndef TWINSPAN_SERVICES_STRUCTURED_GRAMMAR_CONSTRAINT_H_
#define TWINSPAN_SERVICES_STRUCTURED_GRAMMAR_CONSTRAINT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "services/structured/prefix_matcher.h"
#include "services/structured/token_constraint.h"
#include "services/structured/vocab_trie.h"

namespace twinspan::structured {

enum class GrammarKind { kJsonSchema, kRegex, kGbnf };

// What a request asks the output to be.
struct GrammarSpec {
  GrammarKind kind = GrammarKind::kRegex;
  std::string text;  // the schema (JSON text), the pattern, or the grammar
};

// The PCRE2 pattern for `spec`. Errors as JsonSchemaToRegex / GbnfToRegex; a regex is returned as
// is.
absl::StatusOr<std::string> PatternOf(const GrammarSpec& spec);

// Immutable after construction; thread-safe.
class GrammarCompiler {
 public:
  // `end_ids`: the ids that end a stream (EOS), allowed once the output matches in full.
  GrammarCompiler(std::shared_ptr<const VocabTrie> trie, std::vector<uint32_t> end_ids,
                  PrefixMatcherLimits limits = {})
      : trie_(std::move(trie)), end_ids_(std::move(end_ids)), limits_(limits) {}

  // A constraint at the empty output. `extra_end_ids` (a request's stop ids) also end a stream.
  // Errors: those of PatternOf and PrefixMatcher::Compile.
  absl::StatusOr<std::unique_ptr<engine::TokenConstraint>> Compile(
      const GrammarSpec& spec, absl::Span<const uint32_t> extra_end_ids = {}) const;

 private:
  std::shared_ptr<const VocabTrie> trie_;
  std::vector<uint32_t> end_ids_;
  PrefixMatcherLimits limits_;
};

}  // namespace twinspan::structured

#endif  // TWINSPAN_SERVICES_STRUCTURED_GRAMMAR_CONSTRAINT_H_
