// The CPU tile encoder (kernels/cpu/trellis_encode.h): the tail-biting ring and per-position state
// chain, Gaussian tile MSE against exl3-format.md section 5.5 (the repo thresholds of exllamav3's
// tests/test_quant_fn.py and the appendix table of the numpy port), the vector path against the
// scalar reference bit for bit, thread-count invariance, and lossless re-encoding.
#include "kernels/cpu/trellis_encode.h"

#include <cstdint>
#include <random>
#include <vector>

#include "common/exl3/codebook.h"
#include "common/exl3/tile_decode.h"
#include "common/exl3/tile_pack.h"
#include "common/safetensors/half.h"
#include "gtest/gtest.h"
#include "kernels/cpu/parallel.h"

namespace twinspan::cpu {
namespace {

using exl3::Codebook;

constexpr Codebook kCodebooks[] = {Codebook::k3Inst, Codebook::kMcg, Codebook::kMul1};

// exl3-format.md 5.5: exllamav3's thresholds, and the appendix MSE (normalized by sigma^2).
constexpr double kRepoThreshold[9] = {0, 0.3, 0.1, 0.1, 0.1, 0.1, 0.07, 0.05, 0.04};
constexpr double kAppendixMse[3][9] = {
    {0, 0.274, 0.068, 0.018, 0.0047, 0.0019, 0.0004, 0.0002, 0.0002},
    {0, 0.276, 0.067, 0.018, 0.0046, 0.0014, 0.0006, 0.0005, 0.0001},
    {0, 0.273, 0.069, 0.018, 0.0047, 0.0014, 0.0004, 0.0001, 0.0000}};

struct Encoded {
  std::vector<uint16_t> states;
  std::vector<float> values;
};

std::vector<float> GaussianTiles(int64_t tiles, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> t(static_cast<size_t>(tiles * 256));
  for (float& v : t) v = normal(rng);
  return t;
}

Encoded Encode(const std::vector<float>& tiles, int bits, Codebook codebook, ThreadPool* pool,
               bool scalar = false) {
  const int64_t n = static_cast<int64_t>(tiles.size()) / 256;
  Encoded e{std::vector<uint16_t>(tiles.size()), std::vector<float>(tiles.size())};
  const Context ctx{pool};
  const absl::Status s = scalar ? TrellisEncodeScalar(ctx, tiles.data(), n, {bits, codebook},
                                                      e.states.data(), e.values.data())
                                : TrellisEncode(ctx, tiles.data(), n, {bits, codebook},
                                                e.states.data(), e.values.data());
  EXPECT_TRUE(s.ok()) << s;
  return e;
}

// Every state continues the previous one by K bits, around the ring.
void ExpectRing(const uint16_t* states, int bits) {
  const int edge_mask = (1 << (16 - bits)) - 1;
  for (int p = 0; p < 256; ++p) {
    const int prev = states[(p + 255) % 256];
    ASSERT_EQ(states[p] >> bits, prev & edge_mask) << "K=" << bits << " position " << p;
  }
}

TEST(TrellisEncodeTest, GaussianTilesMeetTheReferenceMse) {
  ThreadPool pool(2);
  constexpr int64_t kTiles = 8;
  for (int cb = 0; cb < 3; ++cb) {
    const float sigma = kCodebooks[cb] == Codebook::kMul1 ? 1.0f : 1.2437f;
    for (int bits = 1; bits <= 8; ++bits) {
      const std::vector<float> tiles = GaussianTiles(kTiles, sigma, 100 + 10 * cb + bits);
      const Encoded e = Encode(tiles, bits, kCodebooks[cb], &pool);
      double sq = 0;
      for (size_t i = 0; i < tiles.size(); ++i) {
        sq += (double{tiles[i]} - e.values[i]) * (double{tiles[i]} - e.values[i]);
        ASSERT_EQ(e.values[i], HalfToFloat(exl3::CodebookHalf(kCodebooks[cb], e.states[i])));
      }
      const double mse = sq / static_cast<double>(tiles.size()) / (sigma * sigma);
      EXPECT_LT(mse, kRepoThreshold[bits]) << exl3::CodebookName(kCodebooks[cb]) << " K=" << bits;
      if (bits <= 4) {  // Above, the appendix's values are dominated by the clipped tail: noisy.
        EXPECT_LT(mse, 1.2 * kAppendixMse[cb][bits])
            << exl3::CodebookName(kCodebooks[cb]) << " K=" << bits;
      }
      for (int64_t t = 0; t < kTiles; ++t) ExpectRing(e.states.data() + t * 256, bits);
    }
  }
}

TEST(TrellisEncodeTest, VectorPathEqualsScalarReference) {
  // K = 2 takes the spread step, 3 the padded grouped step with two groups a pass, 7 the unpadded
  // one; three tiles run a pair and a single.
  for (const int bits : {2, 3, 7}) {
    const std::vector<float> tiles = GaussianTiles(3, 1.0f, 7 + bits);
    const Encoded fast = Encode(tiles, bits, Codebook::kMcg, nullptr);
    const Encoded scalar = Encode(tiles, bits, Codebook::kMcg, nullptr, /*scalar=*/true);
    EXPECT_EQ(fast.states, scalar.states) << "K=" << bits;
    EXPECT_EQ(fast.values, scalar.values) << "K=" << bits;
  }
}

TEST(TrellisEncodeTest, ResultDoesNotDependOnThreadsOrBatch) {
  const std::vector<float> tiles = GaussianTiles(7, 1.0f, 3);
  ThreadPool pool(2);
  const Encoded one = Encode(tiles, 4, Codebook::kMul1, nullptr);
  const Encoded two = Encode(tiles, 4, Codebook::kMul1, &pool);
  EXPECT_EQ(one.states, two.states);
  // Tile 3 alone is tile 3 of the batch (it was the second of a pair there).
  const std::vector<float> alone(tiles.begin() + int64_t{3} * 256,
                                 tiles.begin() + int64_t{4} * 256);
  const Encoded single = Encode(alone, 4, Codebook::kMul1, nullptr);
  EXPECT_EQ(single.states, std::vector<uint16_t>(one.states.begin() + int64_t{3} * 256,
                                                 one.states.begin() + int64_t{4} * 256));
}

TEST(TrellisEncodeTest, ReencodingADecodedBitstreamIsLossless) {
  std::mt19937 rng(11);
  for (const Codebook codebook : kCodebooks) {
    for (const int bits : {1, 4, 6, 8}) {
      std::vector<uint16_t> words(size_t{16} * bits);
      for (uint16_t& w : words) w = static_cast<uint16_t>(rng());
      uint16_t states[256];
      exl3::TileStates(reinterpret_cast<const std::byte*>(words.data()), bits, states);
      std::vector<float> tile(256);
      for (int p = 0; p < 256; ++p) {
        tile[p] = HalfToFloat(exl3::CodebookHalf(codebook, states[p]));
      }
      const Encoded e = Encode(tile, bits, codebook, nullptr);
      EXPECT_EQ(e.values, tile) << exl3::CodebookName(codebook) << " K=" << bits;
      // Its own packing decodes to the same values (states may differ where values repeat).
      std::vector<uint16_t> repacked(size_t{16} * bits);
      exl3::PackTile(e.states.data(), bits, repacked.data());
      uint16_t again[256];
      exl3::TileStates(reinterpret_cast<const std::byte*>(repacked.data()), bits, again);
      for (int p = 0; p < 256; ++p) {
        ASSERT_EQ(again[p], e.states[p]) << "K=" << bits << " position " << p;
      }
    }
  }
}

TEST(TrellisEncodeTest, RefusesBadArguments) {
  float tile[256] = {};
  uint16_t states[256];
  float values[256];
  const Context ctx{nullptr};
  EXPECT_EQ(TrellisEncode(ctx, tile, 1, {0, Codebook::kMul1}, states, values).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TrellisEncode(ctx, tile, 1, {9, Codebook::kMul1}, states, values).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TrellisEncode(ctx, nullptr, 1, {4, Codebook::kMul1}, states, values).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TrellisEncode(ctx, tile, -1, {4, Codebook::kMul1}, states, values).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(TrellisEncode(ctx, nullptr, 0, {4, Codebook::kMul1}, nullptr, nullptr).ok());
}

}  // namespace
}  // namespace twinspan::cpu
