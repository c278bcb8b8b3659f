// Trellis state extraction and tile decode against the reference vectors of
// shared/reference/exl3-format.md section 2.6, and a pack/unpack round trip for every K (the
// golden data has no K = 7).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "common/exl3/codebook.h"
#include "common/exl3/tile_decode.h"
#include "gtest/gtest.h"

namespace twinspan::exl3 {
namespace {

// Packs 256 K-bit codes MSB-first into little-endian 32-bit words (exllamav3's pack.cu layout).
std::vector<std::byte> Pack(const std::vector<uint32_t>& codes, int bits) {
  std::vector<uint32_t> words(8 * bits, 0);
  int64_t bit = 0;
  for (uint32_t code : codes) {
    for (int b = bits - 1; b >= 0; --b, ++bit) {
      if ((code >> b) & 1) words[bit / 32] |= 1u << (31 - bit % 32);
    }
  }
  std::vector<std::byte> bytes(words.size() * 4);
  std::memcpy(bytes.data(), words.data(), bytes.size());
  return bytes;
}

TEST(Exl3DecodeTest, BitOrderAnchorK4) {
  std::vector<uint32_t> codes(256);
  for (int p = 0; p < 256; ++p) codes[p] = p & 15;
  const std::vector<std::byte> tile = Pack(codes, 4);
  uint16_t first[4];
  std::memcpy(first, tile.data(), sizeof(first));
  EXPECT_EQ(first[0], 0x4567);
  EXPECT_EQ(first[1], 0x0123);
  EXPECT_EQ(first[2], 0xcdef);
  EXPECT_EQ(first[3], 0x89ab);
  uint16_t states[kTileWeights];
  TileStates(tile.data(), 4, states);
  const uint16_t expected[] = {0xdef0, 0xef01, 0xf012, 0x0123, 0x1234, 0x2345};
  for (int p = 0; p < 6; ++p) EXPECT_EQ(states[p], expected[p]) << p;
}

TEST(Exl3DecodeTest, StatesAreTheRingWindowsForEveryK) {
  std::mt19937 rng(17);
  for (int bits = kMinBits; bits <= kMaxBits; ++bits) {
    std::vector<uint32_t> codes(256);
    for (uint32_t& c : codes) c = rng() & ((1u << bits) - 1);
    uint16_t states[kTileWeights];
    TileStates(Pack(codes, bits).data(), bits, states);
    for (int p = 0; p < 256; ++p) {
      // state(p) = (c_p | c_{p-1} << K | c_{p-2} << 2K | ...) & 0xFFFF, indices mod 256.
      uint32_t want = 0;
      for (int j = 0; j * bits < 16; ++j) want |= codes[(p - j + 256) % 256] << (j * bits);
      ASSERT_EQ(states[p], want & 0xffff) << "K=" << bits << " p=" << p;
    }
  }
}

struct TileVector {
  int bits;
  uint16_t states[5];  // p = 0, 1, 2, 3, 255.
  float values[3][6];  // 3inst, mcg, mul1 at (0,0) (0,1) (1,0) (8,8) (15,15) (7,12).
};

TEST(Exl3DecodeTest, TileDecodeReferenceVectors) {
  const TileVector vectors[] = {
      {2,
       {0x729a, 0xca6b, 0x29ac, 0xa6b0, 0x9ca6},
       {{-1.02734f, 0.521973f, 0.443848f, -0.908203f, -1.61719f, 0.284912f},
        {-0.226807f, -0.408203f, -0.487305f, 2.05859f, -1.31055f, 3.20508f},
        {1.00684f, 0.0117188f, 0.769531f, 1.33105f, -1.80176f, 1.69043f}}},
      {3,
       {0x00b5, 0x05ac, 0x2d60, 0x6b06, 0x8016},
       {{-0.174805f, -0.0236816f, 1.13086f, 0.678223f, 1.54883f, -1.94043f},
        {0.234863f, 1.53418f, 3.625f, -0.865234f, -0.625977f, -0.515625f},
        {0.11322f, -0.312988f, 0.0184937f, -0.976074f, 1.12109f, 1.91309f}}},
      {4,
       {0x386b, 0x86b0, 0x6b06, 0xb06b, 0x6386},
       {{1.25781f, -0.544434f, -0.895996f, 2.51562f, -1.48535f, 1.62988f},
        {-0.208496f, 0.541992f, 1.22168f, -0.0297852f, 0.84375f, -1.03906f},
        {-0.773438f, -2.58594f, -0.272461f, 0.661133f, 0.586914f, 0.133545f}}},
      {6,
       {0x99ac, 0x6b06, 0xc1ac, 0x6b12, 0x2a66},
       {{0.404297f, -0.231689f, 0.572266f, 0.306641f, -2.83984f, -0.796875f},
        {-1.23242f, 3.28516f, -1.37109f, 0.983398f, 0.428467f, 1.70703f},
        {-0.665039f, 0.816895f, -0.421387f, -0.306396f, 1.25f, 1.02051f}}},
  };
  const int cells[6][2] = {{0, 0}, {0, 1}, {1, 0}, {8, 8}, {15, 15}, {7, 12}};
  for (const TileVector& v : vectors) {
    SCOPED_TRACE(v.bits);
    std::vector<uint16_t> words(16 * v.bits);
    for (size_t i = 0; i < words.size(); ++i) words[i] = (i * 0x9e37 + 0x1234) & 0xffff;
    const std::byte* tile = reinterpret_cast<const std::byte*>(words.data());
    uint16_t states[kTileWeights];
    TileStates(tile, v.bits, states);
    const int positions[5] = {0, 1, 2, 3, 255};
    for (int i = 0; i < 5; ++i) EXPECT_EQ(states[positions[i]], v.states[i]) << positions[i];
    const Codebook codebooks[3] = {Codebook::k3Inst, Codebook::kMcg, Codebook::kMul1};
    for (int cb = 0; cb < 3; ++cb) {
      float out[16 * 16];
      DecodeTile(tile, v.bits, codebooks[cb], out, 16);
      for (int c = 0; c < 6; ++c) {
        const float want = v.values[cb][c];
        EXPECT_NEAR(out[cells[c][0] * 16 + cells[c][1]], want, 6e-6f * std::fabs(want) + 1e-7f)
            << CodebookName(codebooks[cb]) << " cell " << c;
      }
    }
  }
}

TEST(Exl3DecodeTest, CodebookReferenceValues) {
  EXPECT_EQ(CodebookHalf(Codebook::k3Inst, 0x0000), 0x3a25);
  EXPECT_EQ(CodebookHalf(Codebook::k3Inst, 0x1234), 0xc066);
  EXPECT_EQ(CodebookHalf(Codebook::kMcg, 0x0001), 0x304e);
  EXPECT_EQ(CodebookHalf(Codebook::kMcg, 0xffff), 0x3acd);
  EXPECT_EQ(CodebookHalf(Codebook::kMul1, 0x0000), 0xc2e8);
  EXPECT_EQ(CodebookHalf(Codebook::kMul1, 0x8000), 0xbaf2);
}

}  // namespace
}  // namespace twinspan::exl3
