// The tokenizer.json "added_tokens": strings matched whole in the input before any normalization
// or pre-tokenization (leftmost-longest, as Hugging Face's AddedVocabulary does), with the
// lstrip / rstrip / normalized / special flags.
#ifndef TWINSPAN_COMMON_TOKENIZER_ADDED_TOKENS_H_
#define TWINSPAN_COMMON_TOKENIZER_ADDED_TOKENS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/tokenizer/normalizer.h"
#include "nlohmann/json_fwd.hpp"

namespace twinspan::tokenizer {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;  // skipped by Decode(skip_special) and not parsed when parse_special=false
  bool lstrip = false;   // swallows whitespace on its left
  bool rstrip = false;   // swallows whitespace on its right
  bool normalized = false;  // matched in normalized text instead of raw text
};

// One piece of split input: an added token's id, or text (id < 0) at [begin, end).
struct Segment {
  size_t begin;
  size_t end;
  int32_t id;
};

// Immutable and thread-safe after construction.
class AddedVocabulary {
 public:
  // Parses the "added_tokens" array; `normalizer` normalizes the contents of normalized tokens.
  // Errors: InvalidArgument for a malformed entry, an empty content, or single_word=true
  // (not supported).
  static absl::StatusOr<AddedVocabulary> FromJson(const nlohmann::json& added_tokens,
                                                  const Normalizer& normalizer);

  // Splits `text` on the tokens with normalized == `normalized_pass`, appending segments in order.
  // With parse_special false, special tokens are left in the text (Hugging Face's
  // encode_special_tokens). REQUIRES: text is valid UTF-8.
  void Split(std::string_view text, bool normalized_pass, bool parse_special,
             std::vector<Segment>* segments) const;

  bool has_normalized_tokens() const { return normalized_trie_.size() > 1; }
  const std::vector<AddedToken>& tokens() const { return tokens_; }
  // The added token with this content, if any.
  const AddedToken* Find(std::string_view content) const;

 private:
  // A byte trie; node 0 is the root. `token` indexes tokens_ (or -1).
  struct TrieNode {
    std::vector<std::pair<uint8_t, int32_t>> children;
    int32_t token = -1;
  };
  void Insert(std::vector<TrieNode>* trie, std::string_view key, int32_t token_index);
  // Longest token starting at text[pos] in `trie`, as an index into tokens_, or -1.
  int32_t LongestMatch(const std::vector<TrieNode>& trie, std::string_view text, size_t pos,
                       size_t* length) const;

  std::vector<AddedToken> tokens_;
  absl::flat_hash_map<std::string, int32_t> by_content_;  // content -> index into tokens_
  std::vector<TrieNode> raw_trie_{1};
  std::vector<TrieNode> normalized_trie_{1};
};

}  // namespace twinspan::tokenizer

#endif  // TWINSPAN_COMMON_TOKENIZER_ADDED_TOKENS_H_
