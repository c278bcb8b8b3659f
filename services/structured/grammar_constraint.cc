#include "services/structured/grammar_constraint.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/structured/gbnf_regex.h"
#include "services/structured/json_schema_regex.h"
#include "services/structured/utf8_prefix.h"

namespace twinspan::structured {
namespace {

// The output so far (bytes) and its UTF-8 state; copies share the matcher and the trie.
class GrammarConstraint : public engine::TokenConstraint {
 public:
  GrammarConstraint(std::shared_ptr<const PrefixMatcher> matcher,
                    std::shared_ptr<const VocabTrie> trie, std::vector<uint32_t> end_ids)
      : matcher_(std::move(matcher)), trie_(std::move(trie)), end_ids_(std::move(end_ids)) {}

  std::unique_ptr<engine::TokenConstraint> Clone() const override {
    return std::make_unique<GrammarConstraint>(*this);
  }

  absl::Status AllowedNext(engine::TokenMask* mask) const override {
    mask->Reset(trie_->vocab_size());
    if (ended_) return absl::OkStatus();
    std::string text = text_;
    const size_t base = text.size();
    absl::Status walked = trie_->Walk(
        [&](std::string_view path) -> absl::StatusOr<bool> {
          Utf8Prefix utf8 = utf8_;
          if (!utf8.Add(path)) return false;
          text.resize(base);
          text.append(path);
          return matcher_->IsViablePrefix(text);
        },
        mask);
    if (!walked.ok()) return walked;
    absl::StatusOr<bool> complete = Complete();
    if (!complete.ok()) return complete.status();
    if (*complete) {
      for (uint32_t id : end_ids_) {
        if (id < static_cast<uint32_t>(trie_->vocab_size())) mask->Allow(id);
      }
    }
    return absl::OkStatus();
  }

  absl::Status Advance(uint32_t id) override {
    if (ended_) return absl::InvalidArgumentError("structured output: the output already ended");
    if (std::find(end_ids_.begin(), end_ids_.end(), id) != end_ids_.end()) {
      absl::StatusOr<bool> complete = Complete();
      if (!complete.ok()) return complete.status();
      if (!*complete) {
        return absl::InvalidArgumentError(
            absl::StrCat("structured output: end id ", id, " before the output is complete"));
      }
      ended_ = true;
      return absl::OkStatus();
    }
    const std::optional<std::string_view> bytes = trie_->bytes(id);
    Utf8Prefix utf8 = utf8_;
    if (!bytes.has_value() || !utf8.Add(*bytes)) {
      return absl::InvalidArgumentError(
          absl::StrCat("structured output: id ", id, " cannot continue the output"));
    }
    const std::string text = text_ + std::string(*bytes);
    absl::StatusOr<bool> viable = matcher_->IsViablePrefix(text);
    if (!viable.ok()) return viable.status();
    if (!*viable) {
      return absl::InvalidArgumentError(
          absl::StrCat("structured output: id ", id, " leaves the grammar's language"));
    }
    text_ = text;
    utf8_ = utf8;
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<bool> Complete() const {
    if (!utf8_.at_boundary()) return false;
    return matcher_->IsComplete(text_);
  }

  std::shared_ptr<const PrefixMatcher> matcher_;
  std::shared_ptr<const VocabTrie> trie_;
  std::vector<uint32_t> end_ids_;
  std::string text_;
  Utf8Prefix utf8_;
  bool ended_ = false;
};

}  // namespace

absl::StatusOr<std::string> PatternOf(const GrammarSpec& spec) {
  switch (spec.kind) {
    case GrammarKind::kJsonSchema:
      return JsonSchemaToRegex(spec.text);
    case GrammarKind::kGbnf:
      return GbnfToRegex(spec.text);
    case GrammarKind::kRegex:
      break;
  }
  if (spec.text.empty()) return absl::InvalidArgumentError("structured output: the regex is empty");
  return spec.text;
}

absl::StatusOr<std::unique_ptr<engine::TokenConstraint>> GrammarCompiler::Compile(
    const GrammarSpec& spec, absl::Span<const uint32_t> extra_end_ids) const {
  absl::StatusOr<std::string> pattern = PatternOf(spec);
  if (!pattern.ok()) return pattern.status();
  absl::StatusOr<std::unique_ptr<PrefixMatcher>> matcher =
      PrefixMatcher::Compile(*pattern, limits_);
  if (!matcher.ok()) return matcher.status();
  std::vector<uint32_t> end_ids = end_ids_;
  end_ids.insert(end_ids.end(), extra_end_ids.begin(), extra_end_ids.end());
  return std::make_unique<GrammarConstraint>(
      std::shared_ptr<const PrefixMatcher>(*std::move(matcher)), trie_, std::move(end_ids));
}

}  // namespace twinspan::structured
