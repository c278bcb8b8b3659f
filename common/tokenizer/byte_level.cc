#include "common/tokenizer/byte_level.h"

#include "common/tokenizer/utf8.h"

namespace twinspan::tokenizer {
namespace {

// Bytes that keep their own code point: '!'..'~', '¡'..'¬', '®'..'ÿ'.
bool MapsToItself(uint32_t b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

}  // namespace

char32_t ByteToCodePoint(uint8_t b) {
  if (MapsToItself(b)) return b;
  // The others are numbered 256, 257, ... in byte order.
  uint32_t rank = 0;
  for (uint32_t x = 0; x < b; ++x) {
    if (!MapsToItself(x)) ++rank;
  }
  return 256 + rank;
}

std::optional<uint8_t> CodePointToByte(char32_t cp) {
  if (cp < 256) {
    if (MapsToItself(cp)) return static_cast<uint8_t>(cp);
    return std::nullopt;
  }
  uint32_t rank = cp - 256;
  for (uint32_t x = 0; x < 256; ++x) {
    if (MapsToItself(x)) continue;
    if (rank == 0) return static_cast<uint8_t>(x);
    --rank;
  }
  return std::nullopt;
}

std::string BytesToByteLevel(std::string_view bytes) {
  std::string out;
  for (char c : bytes) AppendUtf8(ByteToCodePoint(static_cast<uint8_t>(c)), &out);
  return out;
}

std::string ByteLevelTokenBytes(std::string_view token) {
  std::string bytes;
  size_t pos = 0;
  while (pos < token.size()) {
    const size_t n = Utf8SequenceLength(token, pos);
    if (n == 0) return std::string(token);
    const std::optional<uint8_t> b = CodePointToByte(DecodeUtf8At(token, pos, n));
    if (!b.has_value()) return std::string(token);
    bytes.push_back(static_cast<char>(*b));
    pos += n;
  }
  return bytes;
}

}  // namespace twinspan::tokenizer
