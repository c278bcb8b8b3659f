// Incremental decoding for streamed generation: text comes out only in whole UTF-8 characters,
// and the concatenation of every Add() plus Finish() equals Tokenizer::Decode of all the ids.
#ifndef TWINSPAN_COMMON_TOKENIZER_STREAM_DECODER_H_
#define TWINSPAN_COMMON_TOKENIZER_STREAM_DECODER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/tokenizer/tokenizer.h"

namespace twinspan::tokenizer {

// One per stream; not thread-safe. REQUIRES: `tokenizer` outlives the decoder.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = false)
      : tokenizer_(tokenizer), skip_special_(skip_special) {}

  // Returns the text completed by `ids` (possibly empty while a character is still partial).
  // Errors: InvalidArgument for an id not in the tokenizer; the decoder is unchanged then.
  absl::StatusOr<std::string> Add(absl::Span<const int32_t> ids);
  // Flushes held bytes (an unfinished character becomes U+FFFD) and resets the decoder.
  std::string Finish();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::string pending_;  // bytes of an unfinished UTF-8 character (at most 3)
};

}  // namespace twinspan::tokenizer

#endif  // TWINSPAN_COMMON_TOKENIZER_STREAM_DECODER_H_
