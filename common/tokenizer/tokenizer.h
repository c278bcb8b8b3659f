// A Hugging Face tokenizer.json (byte-level BPE: Qwen3, Qwen3.5) loaded and run in C++, with the
// same ids and text as the Hugging Face `tokenizers` library.
//
// Supported: model BPE over the GPT-2 byte-level alphabet (both merge formats, ignore_merges);
// normalizer null / NFC / NFD / NFKC / NFKD / Sequence; pre_tokenizer Split (regex or literal) and
// ByteLevel, ByteLevel last; decoder ByteLevel; post_processor null or ByteLevel; added tokens with
// special / lstrip / rstrip / normalized. Anything else is refused at Open with a message naming
// it.
#ifndef TWINSPAN_COMMON_TOKENIZER_TOKENIZER_H_
#define TWINSPAN_COMMON_TOKENIZER_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/tokenizer/added_tokens.h"
#include "common/tokenizer/bpe.h"
#include "common/tokenizer/normalizer.h"
#include "common/tokenizer/pre_tokenizer.h"

namespace twinspan::tokenizer {

// All methods are const after Open and may be called from many threads at once.
class Tokenizer {
 public:
  // Opens `dir_or_file`: a folder holding tokenizer.json, or the tokenizer.json file itself.
  // Errors: NotFound when the file is missing; InvalidArgument naming the file and the unsupported
  // or malformed part.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Open(const std::string& dir_or_file);
  // Builds from the bytes of a tokenizer.json; `source` names it in error messages.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> FromJsonBytes(std::string_view json_bytes,
                                                                  std::string_view source);

  // Token ids of `text`. Added tokens written in the text become their ids; with parse_special
  // false, tokens marked special are tokenized as plain text (Hugging Face's
  // split_special_tokens / encode_special_tokens). No BOS/EOS is added.
  // Errors: InvalidArgument when text is not valid UTF-8 (with the byte offset); ResourceExhausted
  // when the regex engine hits its limits.
  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                              bool parse_special = true) const;

  // Text of `ids`; invalid UTF-8 produced by partial byte tokens becomes U+FFFD (as Hugging Face).
  // skip_special drops added tokens marked special.
  // Errors: InvalidArgument naming the first id that is not in the tokenizer (Hugging Face drops it
  // silently; we refuse).
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids,
                                     bool skip_special = false) const;

  // Raw bytes of one id (the byte-level decoding, before UTF-8 repair), or nullopt when the id is
  // not in the tokenizer. Used by StreamDecoder.
  std::optional<std::string_view> TokenBytes(int32_t id) const;
  // True for added tokens marked special.
  bool IsSpecial(int32_t id) const;

  // One more than the largest id (model vocab and added tokens).
  int32_t vocab_size() const { return static_cast<int32_t>(id_to_token_.size()); }
  // Id of a token string as written in tokenizer.json (e.g. "<|im_end|>", "Ġthe").
  std::optional<int32_t> TokenId(std::string_view token) const;
  // Token string of an id as written in tokenizer.json, or nullopt.
  std::optional<std::string_view> IdToToken(int32_t id) const;
  // Lowercase hex SHA-256 of the tokenizer.json bytes: services compare it in their handshake.
  const std::string& sha256() const { return sha256_; }

 private:
  Tokenizer() = default;
  absl::Status EncodeText(std::string_view text, std::vector<int32_t>* ids) const;
  absl::Status EncodeNormalized(std::string_view text, bool parse_special, std::string* scratch,
                                std::vector<int32_t>* ids) const;

  Normalizer normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<AddedVocabulary> added_;
  std::vector<std::string> id_to_token_;  // empty string: id not in the tokenizer
  std::vector<std::string> id_to_bytes_;
  std::vector<bool> known_;
  std::vector<bool> special_;
  std::string sha256_;
};

}  // namespace twinspan::tokenizer

#endif  // TWINSPAN_COMMON_TOKENIZER_TOKENIZER_H_
