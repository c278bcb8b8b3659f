// The GPT-2 byte-level alphabet: every byte maps to one printable code point, so BPE vocabularies
// can spell arbitrary bytes (byte 0x20 is 'Ġ' U+0120, printable ASCII maps to itself).
#ifndef TWINSPAN_COMMON_TOKENIZER_BYTE_LEVEL_H_
#define TWINSPAN_COMMON_TOKENIZER_BYTE_LEVEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace twinspan::tokenizer {

// The code point that stands for byte `b`.
char32_t ByteToCodePoint(uint8_t b);

// The byte that code point `cp` stands for, or nullopt when cp is not in the alphabet.
std::optional<uint8_t> CodePointToByte(char32_t cp);

// Spells `bytes` in the alphabet (UTF-8 of the mapped code points).
std::string BytesToByteLevel(std::string_view bytes);

// The bytes a token string stands for, as Hugging Face's ByteLevel decoder computes them: each
// character mapped back to its byte when every character is in the alphabet, else the token's own
// UTF-8 bytes. REQUIRES: token is valid UTF-8.
std::string ByteLevelTokenBytes(std::string_view token);

}  // namespace twinspan::tokenizer

#endif  // TWINSPAN_COMMON_TOKENIZER_BYTE_LEVEL_H_
