#include "common/exl3/tile_decode.h"

#include <array>
#include <bit>
#include <cassert>
#include <cstring>

#include "common/exl3/codebook.h"

namespace twinspan::exl3 {
namespace {

// Trellis words are little-endian uint32 on disk and are copied as is.
static_assert(std::endian::native == std::endian::little);

// Where each position's 16-bit window lies in the tile's words (with the wrap word in front):
// the window is (words[first] << 32 | words[last]) >> shift, low 16 bits.
struct WindowTable {
  std::array<uint8_t, kTileWeights> first{}, last{}, shift{};
};

constexpr std::array<WindowTable, kMaxBits + 1> kWindows = [] {
  std::array<WindowTable, kMaxBits + 1> tables{};
  for (int bits = kMinBits; bits <= kMaxBits; ++bits) {
    for (int p = 0; p < kTileWeights; ++p) {
      // The state is the 16-bit MSB-first window ending at bit (p + 1) * bits; +32 for words[0].
      const int end = (p + 1) * bits + 32;
      const int last = (end - 1) / 32;
      tables[bits].first[p] = static_cast<uint8_t>((end - kStateBits) / 32);
      tables[bits].last[p] = static_cast<uint8_t>(last);
      tables[bits].shift[p] = static_cast<uint8_t>((last + 1) * 32 - end);
    }
  }
  return tables;
}();

template <Codebook kCodebook>
void DecodeStates(const uint16_t* states, float* out, int64_t out_stride) {
  float values[kTileWeights];
  for (int p = 0; p < kTileWeights; ++p) values[p] = CodebookValue<kCodebook>(states[p]);
  for (int p = 0; p < kTileWeights; ++p) {
    const int rc = kTensorCorePerm[p];
    out[(rc / kTileSize) * out_stride + rc % kTileSize] = values[p];
  }
}

}  // namespace

void TileStates(const std::byte* tile, int bits, uint16_t states[kTileWeights]) {
  assert(bits >= kMinBits && bits <= kMaxBits);
  const int num_words = 8 * bits;  // 256 * bits / 32.
  // words[0] repeats the last word so windows that wrap around the ring need no modulo.
  uint32_t words[8 * kMaxBits + 1];
  std::memcpy(words + 1, tile, static_cast<size_t>(num_words) * 4);
  words[0] = words[num_words];
  const WindowTable& table = kWindows[bits];
  for (int p = 0; p < kTileWeights; ++p) {
    const uint64_t pair =
        (static_cast<uint64_t>(words[table.first[p]]) << 32) | words[table.last[p]];
    states[p] = static_cast<uint16_t>(pair >> table.shift[p]);
  }
}

void DecodeTile(const std::byte* tile, int bits, Codebook codebook, float* out,
                int64_t out_stride) {
  uint16_t states[kTileWeights];
  TileStates(tile, bits, states);
  switch (codebook) {
    case Codebook::k3Inst:
      DecodeStates<Codebook::k3Inst>(states, out, out_stride);
      break;
    case Codebook::kMcg:
      DecodeStates<Codebook::kMcg>(states, out, out_stride);
      break;
    case Codebook::kMul1:
      DecodeStates<Codebook::kMul1>(states, out, out_stride);
      break;
  }
}

}  // namespace twinspan::exl3
