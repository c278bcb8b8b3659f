// cpu::Q4Weight and cpu::Q4Linear: bad shapes and values refused, the quantization error bound,
// row and thread invariance, and Linear of a Q4 weight equal to the dense Linear of its
// dequantized weight bit for bit (the documented reduction order is the dense one).
#include "kernels/cpu/q4_linear.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/safetensors/half.h"
#include "gtest/gtest.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/parallel.h"

namespace twinspan::cpu {
namespace {

std::vector<float> RandomVector(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

bool BitEqual(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

Q4Weight RandomQ4(int64_t n, int64_t k, uint32_t seed, float scale = 0.05f) {
  auto w = Q4Weight::Quantize("w", n, k, RandomVector(n * k, seed, scale));
  EXPECT_TRUE(w.ok()) << w.status();
  return *std::move(w);
}

TEST(Q4WeightTest, CreateRefusesBadShapesAndParts) {
  const std::vector<uint16_t> one_group = {0x3c00};
  EXPECT_FALSE(Q4Weight::Create("w", 1, 100, std::vector<uint8_t>(50), {0x3c00}, {0}).ok());
  EXPECT_FALSE(Q4Weight::Create("w", 0, 128, {}, {}, {}).ok());
  EXPECT_FALSE(Q4Weight::Create("w", 1, 128, std::vector<uint8_t>(63), one_group, one_group).ok());
  EXPECT_FALSE(Q4Weight::Create("w", 1, 128, std::vector<uint8_t>(64), {}, one_group).ok());
  EXPECT_FALSE(Q4Weight::Create("w", 1, 128, std::vector<uint8_t>(64), one_group, {}).ok());
  const absl::Status inf =
      Q4Weight::Create("layers.0.mlp.up_proj", 1, 128, std::vector<uint8_t>(64), {0x7c00}, {0})
          .status();
  EXPECT_EQ(inf.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(inf.message().find("layers.0.mlp.up_proj"), std::string::npos) << inf;
  EXPECT_TRUE(Q4Weight::Create("w", 1, 128, std::vector<uint8_t>(64), one_group, {0}).ok());
}

TEST(Q4WeightTest, QuantizeRefusesBadShapesAndValues) {
  EXPECT_FALSE(Q4Weight::Quantize("w", 2, 64, std::vector<float>(128)).ok());
  EXPECT_FALSE(Q4Weight::Quantize("w", 2, 128, std::vector<float>(255)).ok());
  for (const float bad : {std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), 70000.0f, -65520.0f}) {
    std::vector<float> v(256, 0.5f);
    v[130] = bad;
    const absl::Status s = Q4Weight::Quantize("fc", 2, 128, v).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("[1, 2]"), std::string::npos) << s;
  }
  std::vector<float> edge(128, -65504.0f);
  edge[1] = 65504.0f;
  EXPECT_TRUE(Q4Weight::Quantize("w", 1, 128, edge).ok());
}

// Every element within half a step of its group, plus the one fp32 rounding of s * q + o.
TEST(Q4WeightTest, QuantizeErrorIsAtMostHalfAStep) {
  const int64_t n = 24, k = 512;
  std::vector<float> v = RandomVector(n * k, 3, 0.05f);
  for (int64_t i = 0; i < 128; ++i) v[i] = 0.3f;               // A constant group.
  for (int64_t i = 128; i < 256; ++i) v[i] = 1e-3f * i;        // A positive ramp.
  for (int64_t i = 256; i < 384; ++i) v[i] *= 1000.0f;         // A wide group.
  for (int64_t i = 384; i < 512; ++i) v[i] = 1e-7f * (i % 3);  // Subnormal fp16 steps.
  auto w = Q4Weight::Quantize("w", n, k, v);
  ASSERT_TRUE(w.ok()) << w.status();
  const std::vector<float> d = w->Dequantize();
  for (int64_t e = 0; e < n * k; ++e) {
    const int64_t g = e / kQ4GroupSize;
    const float s = HalfToFloat(w->scales()[g]);
    const float bound = 0.5f * s + std::ldexp(std::fabs(d[e]) + std::fabs(v[e]), -24);
    ASSERT_LE(std::fabs(d[e] - v[e]), bound) << "element " << e << " scale " << s;
  }
  for (int64_t i = 0; i < 128; ++i) EXPECT_LE(std::fabs(d[i] - 0.3f), 1e-4f) << i;
}

TEST(Q4WeightTest, StoresTheDocumentedLayout) {
  // Codes 0..15 with scale 0.5 and offset -2: w[i] = 0.5 * (i % 16) - 2, even i in the low nibble.
  std::vector<uint8_t> codes(64);
  for (int b = 0; b < 64; ++b)
    codes[b] = static_cast<uint8_t>(((2 * b) % 16) | (((2 * b + 1) % 16) << 4));
  auto w = Q4Weight::Create("w", 1, 128, codes, {FloatToHalf(0.5f)}, {FloatToHalf(-2.0f)});
  ASSERT_TRUE(w.ok()) << w.status();
  const std::vector<float> d = w->Dequantize();
  for (int i = 0; i < 128; ++i) EXPECT_EQ(d[i], 0.5f * (i % 16) - 2.0f) << i;
  EXPECT_EQ(w->bytes(), 64 + 4);
  auto again = Q4Weight::Quantize("w", 1, 128, d);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(BitEqual(again->Dequantize(), d));
  EXPECT_EQ(std::vector<uint8_t>(again->codes().begin(), again->codes().end()), codes);
}

TEST(Q4LinearTest, EqualsDenseLinearOfTheDequantizedWeightBitForBit) {
  const int64_t rows = 7, k = 384, n = 45;
  const Q4Weight q = RandomQ4(n, k, 4);
  auto dense = LinearWeight::Dense(n, k, q.Dequantize());
  ASSERT_TRUE(dense.ok());
  const LinearWeight q4 = LinearWeight::Q4(q);
  EXPECT_TRUE(q4.is_q4());
  EXPECT_FALSE(q4.is_exl3());
  EXPECT_FALSE(q4.empty());
  EXPECT_EQ(q4.out_features(), n);
  EXPECT_EQ(q4.in_features(), k);
  const std::vector<float> x = RandomVector(rows * (k + 5), 5);
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    const Context ctx{.pool = &pool};
    std::vector<float> want(rows * (n + 2)), got(rows * (n + 2), -1.0f), direct(rows * (n + 2));
    ASSERT_TRUE(Linear(ctx, x.data(), k + 5, rows, *dense, want.data(), n + 2).ok());
    ASSERT_TRUE(Linear(ctx, x.data(), k + 5, rows, q4, got.data(), n + 2).ok());
    ASSERT_TRUE(Q4Linear(ctx, x.data(), k + 5, rows, q, direct.data(), n + 2).ok());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        ASSERT_EQ(got[r * (n + 2) + j], want[r * (n + 2) + j]) << threads << " " << r << "," << j;
        ASSERT_EQ(direct[r * (n + 2) + j], want[r * (n + 2) + j]);
      }
    }
  }
}

TEST(Q4LinearTest, IsCloseToTheUnquantizedLinear) {
  const int64_t rows = 3, k = 1024, n = 64;
  const std::vector<float> v = RandomVector(n * k, 6, 0.02f);
  auto q = Q4Weight::Quantize("w", n, k, v);
  ASSERT_TRUE(q.ok());
  auto exact = LinearWeight::Dense(n, k, v);
  ASSERT_TRUE(exact.ok());
  const std::vector<float> x = RandomVector(rows * k, 7);
  std::vector<float> a(rows * n), b(rows * n);
  ASSERT_TRUE(Linear(Context{}, x.data(), rows, *exact, a.data()).ok());
  ASSERT_TRUE(Linear(Context{}, x.data(), rows, LinearWeight::Q4(*q), b.data()).ok());
  double num = 0, den = 0;
  for (int64_t i = 0; i < rows * n; ++i) {
    num += (a[i] - b[i]) * double(a[i] - b[i]);
    den += a[i] * double(a[i]);
  }
  // 16 levels over a Gaussian group's range (about 6 sigma): ~10% relative error per weight.
  EXPECT_LT(std::sqrt(num / den), 0.15);
}

TEST(Q4LinearTest, RowInvariantForOneToSeventeenRows) {
  const int64_t k = 256, n = 33;
  const LinearWeight w = LinearWeight::Q4(RandomQ4(n, k, 8));
  const std::vector<float> x = RandomVector(17 * k, 9);
  std::vector<float> single(17 * n);
  for (int64_t r = 0; r < 17; ++r) {
    ASSERT_TRUE(Linear(Context{}, x.data() + r * k, 1, w, single.data() + r * n).ok());
  }
  ThreadPool pool(2);
  for (int64_t rows = 1; rows <= 17; ++rows) {
    std::vector<float> y(rows * n);
    ASSERT_TRUE(Linear({.pool = &pool}, x.data(), rows, w, y.data()).ok());
    EXPECT_TRUE(BitEqual(y, std::vector<float>(single.begin(), single.begin() + rows * n)))
        << rows << " rows";
  }
}

TEST(Q4LinearTest, RefusesBadArguments) {
  const Q4Weight q = RandomQ4(4, 128, 10);
  std::vector<float> x(size_t{2} * 128), y(size_t{2} * 4);
  EXPECT_FALSE(Q4Linear(Context{}, x.data(), 127, 2, q, y.data(), 4).ok());
  EXPECT_FALSE(Q4Linear(Context{}, x.data(), 128, 2, q, y.data(), 3).ok());
  EXPECT_FALSE(Q4Linear(Context{}, x.data(), 128, -1, q, y.data(), 4).ok());
  EXPECT_FALSE(Q4Linear(Context{}, x.data(), 128, 2, Q4Weight(), y.data(), 4).ok());
  EXPECT_TRUE(Q4Linear(Context{}, x.data(), 128, 0, q, y.data(), 4).ok());
  EXPECT_FALSE(Linear(Context{}, x.data(), 127, 2, LinearWeight::Q4(q), y.data(), 4).ok());
}

}  // namespace
}  // namespace twinspan::cpu
