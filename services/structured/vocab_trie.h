// The vocabulary's token byte strings as a trie: one walk finds every token that keeps an output a
// prefix of the grammar's language, checking each shared token prefix once and skipping every
// token under a prefix that is already dead.
#ifndef TWINSPAN_SERVICES_STRUCTURED_VOCAB_TRIE_H_
#define TWINSPAN_SERVICES_STRUCTURED_VOCAB_TRIE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "services/structured/token_constraint.h"

namespace twinspan::structured {

// Immutable after construction; thread-safe.
class VocabTrie {
 public:
  // token_bytes[id]: the bytes id decodes to, or nullopt (or empty) for ids a grammar never
  // produces (special tokens).
  explicit VocabTrie(const std::vector<std::optional<std::string>>& token_bytes);

  int vocab_size() const { return vocab_size_; }
  // The bytes of `id`, or nullopt for ids outside the trie.
  std::optional<std::string_view> bytes(uint32_t id) const;
  // Sets in `mask` every id whose bytes b make viable(b) true, asking viable for a prefix only
  // once its own prefix passed (so viable must be prefix-closed). viable's errors stop the walk.
  absl::Status Walk(const std::function<absl::StatusOr<bool>(std::string_view)>& viable,
                    engine::TokenMask* mask) const;
  size_t nodes() const { return nodes_.size(); }

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // by byte
    std::vector<uint32_t> ids;                          // tokens ending here
    uint8_t byte = 0;                                   // the edge from the parent
  };
  int vocab_size_ = 0;
  std::vector<Node> nodes_;  // [0] is the root (the empty prefix)
  std::vector<std::optional<std::string>> bytes_;
};

}  // namespace twinspan::structured

#endif  // TWINSPAN_SERVICES_STRUCTURED_VOCAB_TRIE_H_
