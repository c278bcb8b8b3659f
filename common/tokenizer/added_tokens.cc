#include "common/tokenizer/added_tokens.h"

#include "absl/strings/str_cat.h"
#include "common/tokenizer/utf8.h"
#include "nlohmann/json.hpp"

namespace twinspan::tokenizer {
namespace {

bool Flag(const nlohmann::json& entry, const char* name) {
  return entry.contains(name) && entry[name].is_boolean() && entry[name].get<bool>();
}

// Start of the whitespace run that ends at `end` (Rust char::is_whitespace), not before `floor`.
size_t WhitespaceRunStart(std::string_view text, size_t end, size_t floor) {
  size_t start = end;
  while (start > floor) {
    size_t lead = start - 1;
    while (lead > floor && (static_cast<uint8_t>(text[lead]) & 0xC0) == 0x80) --lead;
    const size_t n = Utf8SequenceLength(text, lead);
    if (n == 0 || lead + n != start || !IsUnicodeWhitespace(DecodeUtf8At(text, lead, n))) break;
    start = lead;
  }
  return start;
}

size_t WhitespaceRunEnd(std::string_view text, size_t begin) {
  size_t end = begin;
  while (end < text.size()) {
    const size_t n = Utf8SequenceLength(text, end);
    if (n == 0 || !IsUnicodeWhitespace(DecodeUtf8At(text, end, n))) break;
    end += n;
  }
  return end;
}

}  // namespace

void AddedVocabulary::Insert(std::vector<TrieNode>* trie, std::string_view key,
                             int32_t token_index) {
  int32_t node = 0;
  for (char c : key) {
    const uint8_t b = static_cast<uint8_t>(c);
    int32_t child = -1;
    for (const auto& [byte, index] : (*trie)[node].children) {
      if (byte == b) child = index;
    }
    if (child < 0) {
      child = static_cast<int32_t>(trie->size());
      (*trie)[node].children.emplace_back(b, child);
      trie->emplace_back();
    }
    node = child;
  }
  (*trie)[node].token = token_index;
}

absl::StatusOr<AddedVocabulary> AddedVocabulary::FromJson(const nlohmann::json& added_tokens,
                                                          const Normalizer& normalizer) {
  AddedVocabulary vocab;
  if (added_tokens.is_null()) return vocab;
  if (!added_tokens.is_array())
    return absl::InvalidArgumentError("tokenizer.json: \"added_tokens\" is not an array");
  for (size_t i = 0; i < added_tokens.size(); ++i) {
    const nlohmann::json& entry = added_tokens[i];
    if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_number_integer() ||
        entry["id"].get<int64_t>() < 0 || entry["id"].get<int64_t>() > INT32_MAX ||
        !entry.contains("content") || !entry["content"].is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokenizer.json: added_tokens[", i,
                       "] needs an integer \"id\" and a string \"content\""));
    }
    AddedToken token;
    token.id = static_cast<int32_t>(entry["id"].get<int64_t>());
    token.content = entry["content"].get<std::string>();
    token.special = Flag(entry, "special");
    token.lstrip = Flag(entry, "lstrip");
    token.rstrip = Flag(entry, "rstrip");
    token.normalized = Flag(entry, "normalized");
    if (token.content.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokenizer.json: added_tokens[", i, "] is empty"));
    }
    absl::Status valid = ValidateUtf8(token.content);
    if (!valid.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("tokenizer.json: added_tokens[", i, "]: ", valid.message()));
    if (Flag(entry, "single_word")) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokenizer.json: added token \"", token.content,
                       "\" has single_word=true, which is not supported"));
    }
    const int32_t index = static_cast<int32_t>(vocab.tokens_.size());
    vocab.by_content_[token.content] = index;
    if (token.normalized) {
      std::string key;
      absl::Status status = normalizer.Normalize(token.content, &key);
      if (!status.ok()) return status;
      vocab.Insert(&vocab.normalized_trie_, key, index);
    } else {
      vocab.Insert(&vocab.raw_trie_, token.content, index);
    }
    vocab.tokens_.push_back(std::move(token));
  }
  return vocab;
}

const AddedToken* AddedVocabulary::Find(std::string_view content) const {
  auto it = by_content_.find(absl::string_view(content.data(), content.size()));
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

int32_t AddedVocabulary::LongestMatch(const std::vector<TrieNode>& trie, std::string_view text,
                                      size_t pos, size_t* length) const {
  int32_t node = 0;
  int32_t best = -1;
  for (size_t i = pos; i < text.size(); ++i) {
    const uint8_t b = static_cast<uint8_t>(text[i]);
    int32_t child = -1;
    for (const auto& [byte, index] : trie[node].children) {
      if (byte == b) {
        child = index;
        break;
      }
    }
    if (child < 0) break;
    node = child;
    if (trie[node].token >= 0) {
      best = trie[node].token;
      *length = i + 1 - pos;
    }
  }
  return best;
}

void AddedVocabulary::Split(std::string_view text, bool normalized_pass, bool parse_special,
                            std::vector<Segment>* segments) const {
  const std::vector<TrieNode>& trie = normalized_pass ? normalized_trie_ : raw_trie_;
  bool first_byte[256] = {};
  for (const auto& [byte, index] : trie[0].children) first_byte[byte] = true;
  size_t segment_start = 0;  // end of the previous token
  size_t pos = 0;
  while (pos < text.size()) {
    if (!first_byte[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    size_t length = 0;
    const int32_t index = LongestMatch(trie, text, pos, &length);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[index];
    if (token.special && !parse_special) {
      pos += length;
      continue;
    }
    size_t begin = pos;
    size_t end = pos + length;
    if (token.lstrip) begin = WhitespaceRunStart(text, begin, segment_start);
    if (token.rstrip) end = WhitespaceRunEnd(text, end);
    if (begin > segment_start) segments->push_back({segment_start, begin, -1});
    segments->push_back({begin, end, token.id});
    segment_start = end;
    pos = end;
  }
  if (segment_start < text.size()) segments->push_back({segment_start, text.size(), -1});
}

}  // namespace twinspan::tokenizer
