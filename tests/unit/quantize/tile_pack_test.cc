// PackTile (common/exl3/tile_pack.h) is the exact inverse of the decoder's TileStates: any tile's
// words survive decode then pack, and any tail-biting ring of states survives pack then decode.
#include "common/exl3/tile_pack.h"

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "common/exl3/tile_decode.h"
#include "gtest/gtest.h"

namespace twinspan::exl3 {
namespace {

const std::byte* Bytes(const std::vector<uint16_t>& words) {
  return reinterpret_cast<const std::byte*>(words.data());
}

TEST(TilePackTest, DecodeThenPackGivesTheWordsBackForEveryK) {
  std::mt19937 rng(5);
  for (int bits = kMinBits; bits <= kMaxBits; ++bits) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<uint16_t> words(size_t{16} * bits);
      for (uint16_t& w : words) w = static_cast<uint16_t>(rng());
      uint16_t states[kTileWeights];
      TileStates(Bytes(words), bits, states);
      std::vector<uint16_t> packed(size_t{16} * bits, 0xdead);
      PackTile(states, bits, packed.data());
      ASSERT_EQ(packed, words) << "K=" << bits;
    }
  }
}

TEST(TilePackTest, PackThenDecodeGivesATailBitingRingBack) {
  std::mt19937 rng(6);
  for (int bits = kMinBits; bits <= kMaxBits; ++bits) {
    // A ring: random codes, each state the 16-bit window ending at its code.
    std::vector<uint32_t> codes(kTileWeights);
    for (uint32_t& c : codes) c = rng() & ((1u << bits) - 1);
    uint16_t states[kTileWeights];
    for (int p = 0; p < kTileWeights; ++p) {
      uint32_t s = 0;
      for (int j = 0; j * bits < 16; ++j)
        s |= codes[(p - j + kTileWeights) % kTileWeights] << (j * bits);
      states[p] = static_cast<uint16_t>(s);
    }
    std::vector<uint16_t> packed(size_t{16} * bits);
    PackTile(states, bits, packed.data());
    uint16_t decoded[kTileWeights];
    TileStates(Bytes(packed), bits, decoded);
    for (int p = 0; p < kTileWeights; ++p) ASSERT_EQ(decoded[p], states[p]) << "K=" << bits;
  }
}

TEST(TilePackTest, BitOrderAnchorK4) {
  // exl3-format.md 2.6: codes p & 15 pack to int16 [0x4567, 0x0123, 0xcdef, 0x89ab, ...].
  uint16_t states[kTileWeights];
  for (int p = 0; p < kTileWeights; ++p) states[p] = static_cast<uint16_t>(p & 15);
  std::vector<uint16_t> packed(64);
  PackTile(states, 4, packed.data());
  EXPECT_EQ(packed[0], 0x4567);
  EXPECT_EQ(packed[1], 0x0123);
  EXPECT_EQ(packed[2], 0xcdef);
  EXPECT_EQ(packed[3], 0x89ab);
}

}  // namespace
}  // namespace twinspan::exl3
