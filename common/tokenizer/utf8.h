// UTF-8 helpers: strict validation, code point iteration, and lossy decoding that replaces invalid
// bytes with U+FFFD exactly as Rust's String::from_utf8_lossy and WHATWG TextDecoder do.
#ifndef TWINSPAN_COMMON_TOKENIZER_UTF8_H_
#define TWINSPAN_COMMON_TOKENIZER_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace twinspan::tokenizer {

// Returns OK when `text` is well-formed UTF-8 (no overlongs, surrogates or code points > U+10FFFF);
// otherwise InvalidArgument naming the byte offset of the first bad sequence.
absl::Status ValidateUtf8(std::string_view text);

// Length of the well-formed sequence starting at text[pos], or 0 when it is not one.
size_t Utf8SequenceLength(std::string_view text, size_t pos);

// Decodes the well-formed sequence at text[pos] of `length` bytes. REQUIRES: length from above > 0.
char32_t DecodeUtf8At(std::string_view text, size_t pos, size_t length);

// Appends the UTF-8 encoding of `cp`. REQUIRES: cp <= 0x10FFFF and not a surrogate.
void AppendUtf8(char32_t cp, std::string* out);

// Appends `bytes` to `out`, replacing each maximal invalid subpart with U+FFFD.
void AppendUtf8Lossy(std::string_view bytes, std::string* out);

// Length of the longest suffix of `bytes` that is an incomplete but so far valid UTF-8 sequence
// (0 to 3 bytes): the part a streaming decoder must hold back until more bytes arrive.
size_t IncompleteUtf8Suffix(std::string_view bytes);

// True for the Unicode White_Space property (what Rust's char::is_whitespace tests).
bool IsUnicodeWhitespace(char32_t cp);

}  // namespace twinspan::tokenizer

#endif  // TWINSPAN_COMMON_TOKENIZER_UTF8_H_
