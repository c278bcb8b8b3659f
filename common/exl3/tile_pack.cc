#include "common/exl3/tile_pack.h"

#include <bit>
#include <cassert>
#include <cstring>

namespace twinspan::exl3 {

// Words go to disk as the host holds them, as tile_decode.cc reads them.
static_assert(std::endian::native == std::endian::little);

void PackTile(const uint16_t states[kTileWeights], int bits, uint16_t* tile) {
  assert(bits >= kMinBits && bits <= kMaxBits);
  uint32_t words[8 * kMaxBits] = {};
  const uint32_t mask = (1u << bits) - 1;
  for (int p = 0; p < kTileWeights; ++p) {
    const uint32_t code = states[p] & mask;
    const int bit = p * bits, word = bit / 32;
    // The code's K bits end `shift` bits above the word's LSB; a negative shift spills over into
    // the next word's top.
    const int shift = 32 - bit % 32 - bits;
    if (shift >= 0) {
      words[word] |= code << shift;
    } else {
      words[word] |= code >> -shift;
      words[word + 1] |= code << (32 + shift);
    }
  }
  std::memcpy(tile, words, static_cast<size_t>(8 * bits) * sizeof(uint32_t));
}

}  // namespace twinspan::exl3
