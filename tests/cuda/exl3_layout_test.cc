// Host tests of the CUDA EXL3 linear's trellis layout (kernels/cuda/exl3_layout.h) and of the
// per-lane state extraction the kernels run (kernels/cuda/exl3_lane_windows.h), against the
// format's own tile decode (exl3::TileStates, exl3-format.md 2.2). They need no GPU: the 32 lanes
// of a warp, their shuffles included, are simulated on the CPU.
#include "kernels/cuda/exl3_layout.h"

#include <cstdint>
#include <random>
#include <vector>

#include "common/exl3/tile_decode.h"
#include "gtest/gtest.h"
#include "kernels/cuda/exl3_lane_windows.h"

namespace twinspan::cuda {
namespace {

using exl3_bits::Prev1;
using exl3_bits::SendWord;
using exl3_bits::WindowStates;

// Lane `lane`'s K words of half-strip (b, h, tk), read as the kernel reads them.
template <int K>
void LaneWords(const std::vector<uint32_t>& dev, int64_t k, int64_t b, int h, int64_t tk, int lane,
               uint32_t (&w)[K]) {
  constexpr int V = Exl3VectorWords(K);
  const uint32_t* strip = dev.data() + b * Exl3BlockWords(k, K) + (h * (k / 16) + tk) * 32 * K;
  for (int v = 0; v < K / V; ++v)
    for (int i = 0; i < V; ++i) w[v * V + i] = strip[(v * 32 + lane) * V + i];
}

// The states every simulated lane extracts for tile T of a half-strip, per position 8l + j.
template <int K, int T>
std::vector<uint16_t> SimulatedStates(const uint32_t (&w)[32][K]) {
  uint32_t sent[32];
  for (int l = 0; l < 32; ++l) sent[l] = SendWord<K, T>(w[l]);
  std::vector<uint16_t> out(256);
  for (int l = 0; l < 32; ++l) {
    uint32_t prev = sent[(l + 31) % 32];
    if (K == 1) prev = Prev1(prev, sent[(l + 30) % 32]);
    uint32_t s[8];
    WindowStates<K, T>(w[l], prev, s);
    for (int j = 0; j < 8; ++j) {
      EXPECT_LT(s[j], 65536u) << "lane " << l << " j " << j;
      out[8 * l + j] = static_cast<uint16_t>(s[j]);
    }
  }
  return out;
}

template <int K>
void CheckWidth(uint32_t seed) {
  constexpr int64_t k = 256, n = 384, row_tiles = n / 16 + 3;  // A stored row wider than n.
  std::mt19937 rng(seed);
  std::vector<uint16_t> stored(k / 16 * row_tiles * 16 * K);
  for (auto& v : stored) v = static_cast<uint16_t>(rng());
  std::vector<uint32_t> dev(k * n * K / 32, 0xDEADBEEFu);
  ToExl3DeviceLayout(stored.data(), row_tiles, k, n, K, dev.data());
  for (int64_t b = 0; b < n / 128; ++b)
    for (int h = 0; h < 2; ++h)
      for (int64_t tk = 0; tk < k / 16; ++tk) {
        uint32_t w[32][K];
        for (int l = 0; l < 32; ++l) LaneWords<K>(dev, k, b, h, tk, l, w[l]);
        const std::vector<uint16_t> got[4] = {SimulatedStates<K, 0>(w), SimulatedStates<K, 1>(w),
                                              SimulatedStates<K, 2>(w), SimulatedStates<K, 3>(w)};
        for (int t = 0; t < 4; ++t) {
          const int64_t tn = b * 8 + int64_t{h} * 4 + t;
          uint16_t want[256];
          exl3::TileStates(
              reinterpret_cast<const std::byte*>(stored.data() + (tk * row_tiles + tn) * 16 * K), K,
              want);
          for (int p = 0; p < 256; ++p)
            ASSERT_EQ(got[t][p], want[p]) << "K " << K << " block " << b << " half " << h
                                          << " k-tile " << tk << " tile " << t << " pos " << p;
        }
      }
}

TEST(Exl3DeviceLayoutTest, EveryLaneExtractsTheFormatsStatesForEveryWidth) {
  CheckWidth<1>(1);
  CheckWidth<2>(2);
  CheckWidth<3>(3);
  CheckWidth<4>(4);
  CheckWidth<5>(5);
  CheckWidth<6>(6);
  CheckWidth<7>(7);
  CheckWidth<8>(8);
}

// 2-tile items (9 rows and more): a lane loads the pair's words as the kernel does (natural words
// p*K/2 .. p*K/2 + K/2 - 1 for even K, all K for odd K), and PairView must make tiles 2p and 2p+1
// decode as tiles 0 and 1 do, to the format's states.
template <int K>
void CheckPairs(uint32_t seed) {
  constexpr int kLoad = exl3_bits::PairLoadWords(K);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 64; ++trial) {
    uint32_t w[32][K];
    for (auto& lane : w)
      for (uint32_t& word : lane) word = rng();
    const std::vector<uint16_t> full[4] = {SimulatedStates<K, 0>(w), SimulatedStates<K, 1>(w),
                                           SimulatedStates<K, 2>(w), SimulatedStates<K, 3>(w)};
    for (int p = 0; p < 2; ++p) {
      uint32_t v[32][K];
      for (int l = 0; l < 32; ++l) {
        uint32_t c[kLoad];
        for (int i = 0; i < kLoad; ++i) c[i] = w[l][K % 2 == 0 ? p * K / 2 + i : i];
        exl3_bits::PairView<K>(c, p, v[l]);
      }
      ASSERT_EQ((SimulatedStates<K, 0>(v)), full[ptrdiff_t{2} * p]) << "K " << K << " pair " << p;
      ASSERT_EQ((SimulatedStates<K, 1>(v)), full[ptrdiff_t{2} * p + 1])
          << "K " << K << " pair " << p;
    }
  }
}

TEST(Exl3DeviceLayoutTest, TilePairsDecodeAsTilesZeroAndOne) {
  CheckPairs<1>(11);
  CheckPairs<2>(12);
  CheckPairs<3>(13);
  CheckPairs<4>(14);
  CheckPairs<5>(15);
  CheckPairs<6>(16);
  CheckPairs<7>(17);
  CheckPairs<8>(18);
}

TEST(Exl3DeviceLayoutTest, PairLoadsAreTheKernelsOffsets) {
  // The kernel loads a pair's words as one vector (K = 2, 4, 8) or, at K = 6, as three words at
  // offsets 0, 1 or 63, and 64 from the first: they must be the natural words p*K/2 ...
  for (int lane = 0; lane < 32; ++lane)
    for (int p = 0; p < 2; ++p) {
      for (int K : {2, 4, 8}) {
        const int first = Exl3LaneWordOffset(K, lane, p * K / 2);
        EXPECT_EQ(first % (K / 2), 0) << "K " << K;  // Aligned for its vector load.
        for (int i = 0; i < K / 2; ++i)
          EXPECT_EQ(Exl3LaneWordOffset(K, lane, p * K / 2 + i), first + i) << "K " << K;
      }
      const int first = Exl3LaneWordOffset(6, lane, 3 * p);
      EXPECT_EQ(Exl3LaneWordOffset(6, lane, 3 * p + 1) - first, p ? 63 : 1);
      EXPECT_EQ(Exl3LaneWordOffset(6, lane, 3 * p + 2) - first, 64);
    }
}

TEST(Exl3DeviceLayoutTest, BlocksAreContiguousSoAViewIsAnOffset) {
  // Block b of the layout depends only on block b's tiles: a matrix of blocks 2..3 laid out alone
  // equals words [2, 4) * Exl3BlockWords of the whole matrix laid out.
  constexpr int K = 4;
  constexpr int64_t k = 128, n = 512, tiles = n / 16;
  std::mt19937 rng(9);
  std::vector<uint16_t> stored(k / 16 * tiles * 16 * K);
  for (auto& v : stored) v = static_cast<uint16_t>(rng());
  std::vector<uint32_t> whole(k * n * K / 32), part(k * 256 * K / 32);
  ToExl3DeviceLayout(stored.data(), tiles, k, n, K, whole.data());
  ToExl3DeviceLayout(stored.data() + ptrdiff_t{2} * 8 * 16 * K, tiles, k, 256, K, part.data());
  const int64_t off = 2 * Exl3BlockWords(k, K);
  for (size_t i = 0; i < part.size(); ++i) ASSERT_EQ(part[i], whole[off + i]) << i;
}

TEST(Exl3DeviceLayoutTest, FourBitAnchorFromTheFormatNotes) {
  // exl3-format.md 2.6: K = 4 codes c_p = p & 15 give states 0xdef0, 0xef01, 0xf012 at p = 0..2.
  constexpr int K = 4;
  std::vector<uint16_t> stored(size_t{16} * K * 8 * 1);  // One k-tile row of 8 tiles (one block).
  for (int tn = 0; tn < 8; ++tn)
    for (int j = 0; j < 32; ++j) {  // Word j holds codes 8j .. 8j+7: 0x01234567 or 0x89abcdef.
      const uint32_t word = j % 2 == 0 ? 0x01234567u : 0x89abcdefu;
      stored[tn * 16 * K + 2 * j] = static_cast<uint16_t>(word & 0xFFFF);
      stored[tn * 16 * K + 2 * j + 1] = static_cast<uint16_t>(word >> 16);
    }
  std::vector<uint32_t> dev(16 * 128 * K / 32);
  ToExl3DeviceLayout(stored.data(), 8, 16, 128, K, dev.data());
  uint32_t w[32][K];
  for (int l = 0; l < 32; ++l) LaneWords<K>(dev, 16, 0, 0, 0, l, w[l]);
  const std::vector<uint16_t> s = SimulatedStates<K, 0>(w);
  EXPECT_EQ(s[0], 0xdef0);
  EXPECT_EQ(s[1], 0xef01);
  EXPECT_EQ(s[2], 0xf012);
  EXPECT_EQ(s[3], 0x0123);
}

}  // namespace
}  // namespace twinspan::cuda
