// The quantizer's dense helpers (common/exl3/quantize/dense.h, hessian.h) against plain loops.
#include "common/exl3/quantize/dense.h"

#include <cmath>
#include <random>
#include <vector>

#include "common/exl3/hadamard.h"
#include "common/exl3/quantize/hessian.h"
#include "gtest/gtest.h"

namespace twinspan::exl3::quantize {
namespace {

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(DenseTest, GemmTNIsOneFmaPerRInOrderForAnyThreadCount) {
  const int64_t m = 36, n = 50, p = 300;  // Remainders on both sides of the 4 x 16 blocks.
  const std::vector<float> a = Random(p * m, 1), b = Random(p * n, 2), c0 = Random(m * n, 3);
  std::vector<float> want = c0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t r = 0; r < p; ++r)
        want[i * n + j] = std::fma(a[r * m + i], b[r * n + j], want[i * n + j]);
    }
  }
  std::vector<float> inline_c = c0, pooled_c = c0;
  GemmTN(nullptr, m, n, p, a.data(), m, b.data(), n, inline_c.data(), n);
  cpu::ThreadPool pool(2);
  GemmTN(&pool, m, n, p, a.data(), m, b.data(), n, pooled_c.data(), n);
  EXPECT_EQ(inline_c, want);
  EXPECT_EQ(pooled_c, want);
}

TEST(DenseTest, SymmetricRankUpdateEqualsGemm) {
  const int64_t k = 256, p = 70;
  const std::vector<float> x = Random(p * k, 4);
  std::vector<float> full(k * k, 0.0f), sym(k * k, 0.0f);
  GemmTN(nullptr, k, k, p, x.data(), k, x.data(), k, full.data(), k);
  SymmetricRankUpdate(nullptr, k, p, x.data(), k, sym.data(), k);
  EXPECT_EQ(sym, full);
}

TEST(DenseTest, CholeskyFactorsAndRefusesIndefinite) {
  const int64_t n = 150;  // Several 64-wide panels and a ragged one.
  const std::vector<float> x = Random(n * 2 * n, 5);
  std::vector<double> a(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t r = 0; r < 2 * n; ++r) a[i * n + j] += double{x[r * n + i]} * x[r * n + j];
    }
  }
  std::vector<double> l = a;
  cpu::ThreadPool pool(2);
  ASSERT_TRUE(CholeskyLower(&pool, n, l.data()));
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t t = 0; t < n; ++t) s += l[i * n + t] * l[j * n + t];
      worst = std::max(worst, std::abs(s - a[i * n + j]) / a[i * n + i]);
      if (j > i) {
        EXPECT_EQ(l[i * n + j], 0.0);
      }
    }
  }
  EXPECT_LT(worst, 1e-10);
  std::vector<double> bad = a;
  bad[7 * n + 7] = -1.0;
  EXPECT_FALSE(CholeskyLower(&pool, n, bad.data()));
}

TEST(DenseTest, HadamardsMatchTheFormatsTransform) {
  const int64_t rows = 256, cols = 384;
  const std::vector<float> x = Random(rows * cols, 6);
  std::vector<float> right = x, left = x;
  HadamardRight(right.data(), rows, cols, cols);
  HadamardLeft(left.data(), rows, cols, cols);
  std::vector<float> block(128);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c0 = 0; c0 < cols; c0 += 128) {
      std::copy(x.begin() + r * cols + c0, x.begin() + r * cols + c0 + 128, block.begin());
      Hadamard128(block.data());
      for (int i = 0; i < 128; ++i) ASSERT_EQ(right[r * cols + c0 + i], block[i]);
    }
  }
  for (int64_t c = 0; c < cols; ++c) {
    for (int64_t r0 = 0; r0 < rows; r0 += 128) {
      for (int i = 0; i < 128; ++i) block[i] = x[(r0 + i) * cols + c];
      Hadamard128(block.data());
      for (int i = 0; i < 128; ++i) ASSERT_EQ(left[(r0 + i) * cols + c], block[i]);
    }
  }
}

TEST(HessianTest, MeanDropsRowsThatAreNotFinite) {
  const int64_t k = 128, rows = 40;
  std::vector<float> x = Random(rows * k, 7);
  x[3 * k + 5] = INFINITY;
  x[9 * k] = NAN;
  HessianAccumulator acc(k);
  acc.Add(nullptr, x.data(), 20, k);
  acc.Add(nullptr, x.data() + 20 * k, rows - 20, k);
  EXPECT_EQ(acc.rows(), rows - 2);
  EXPECT_EQ(acc.dropped(), 2);
  const std::vector<float> h = acc.Mean();
  ASSERT_EQ(h.size(), static_cast<size_t>(k * k));
  double worst = 0;
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      double s = 0;
      for (int64_t r = 0; r < rows; ++r) {
        if (r == 3 || r == 9) continue;
        s += double{x[r * k + i]} * x[r * k + j];
      }
      worst = std::max(worst, std::abs(s / (rows - 2) - h[i * k + j]));
      ASSERT_EQ(h[i * k + j], h[j * k + i]);
    }
  }
  EXPECT_LT(worst, 1e-5);
  EXPECT_TRUE(HessianAccumulator(k).Mean().empty());
}

TEST(HessianTest, LdlFactorHasZeroDiagonalBlocksAndRefusesBadSizes) {
  const int64_t k = 256;
  const std::vector<float> x = Random(300 * k, 8);
  HessianAccumulator acc(k);
  acc.Add(nullptr, x.data(), 300, k);
  const std::vector<float> signs(k, 1.0f);
  absl::StatusOr<std::vector<float>> l = LdlFactor(nullptr, acc.Mean(), signs, {});
  ASSERT_TRUE(l.ok()) << l.status();
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = i / 16 * 16; j < k; ++j) ASSERT_EQ((*l)[i * k + j], 0.0f) << i << " " << j;
  }
  EXPECT_NE((*l)[20 * k + 3], 0.0f);
  EXPECT_EQ(LdlFactor(nullptr, acc.Mean(), std::vector<float>(100, 1.0f), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinspan::exl3::quantize
