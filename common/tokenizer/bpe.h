// Byte-level BPE: the "model" of tokenizer.json with type "BPE". Pieces arrive as raw bytes; each
// byte starts as the vocabulary id of its byte-level character and adjacent ids merge by rank
// (lowest first, leftmost on ties), exactly as Hugging Face's BPE::merge_word does.
#ifndef TWINSPAN_COMMON_TOKENIZER_BPE_H_
#define TWINSPAN_COMMON_TOKENIZER_BPE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace twinspan::tokenizer {

class PieceCache;

// Thread-safe after construction: Encode may run on many threads (the piece cache locks).
class BpeModel {
 public:
  // Parses the "model" value. Both merge formats are accepted: "a b" strings and ["a", "b"] pairs.
  // Errors: InvalidArgument for a non-BPE model, options this implementation does not support
  // (dropout, byte_fallback, subword prefixes/suffixes), a byte-level character missing from the
  // vocabulary, or a merge whose parts or result are not in the vocabulary.
  static absl::StatusOr<std::unique_ptr<BpeModel>> FromJson(const nlohmann::json& model);
  ~BpeModel();

  // Appends the ids of one pre-tokenized piece (raw bytes, non-empty).
  void Encode(std::string_view piece, std::vector<int32_t>* ids) const;

  // token string -> id of the model vocabulary (added tokens are kept elsewhere).
  const absl::flat_hash_map<std::string, int32_t>& vocab() const { return vocab_; }

 private:
  BpeModel();
  void Merge(std::string_view piece, std::vector<int32_t>* ids) const;

  absl::flat_hash_map<std::string, int32_t> vocab_;
  std::array<int32_t, 256> byte_ids_{};
  // (left id << 32 | right id) -> (rank << 32 | merged id).
  absl::flat_hash_map<uint64_t, uint64_t> merges_;
  bool ignore_merges_ = false;
  absl::flat_hash_map<std::string, int32_t> bytes_to_id_;  // only with ignore_merges
  std::unique_ptr<PieceCache> cache_;
};

}  // namespace twinspan::tokenizer

#endif  // TWINSPAN_COMMON_TOKENIZER_BPE_H_
