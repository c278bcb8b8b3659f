// The 128-point Hadamard against the explicit Sylvester matrix (the reference exllamav3's
// tests/test_reconstruct_had.py uses): H[i][j] = (-1)^popcount(i & j) / sqrt(128).
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/exl3/hadamard.h"
#include "gtest/gtest.h"
#include "kernels/cpu/hadamard.h"

namespace twinspan {
namespace {

double Sylvester(int i, int j) {
  return (std::popcount(static_cast<unsigned>(i & j)) % 2 ? -1.0 : 1.0) / std::sqrt(128.0);
}

TEST(HadamardTest, MatchesTheExplicitSylvesterMatrix) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> value(-1, 1);
  std::vector<float> x(128);
  for (float& v : x) v = value(rng);
  std::vector<float> y = x;
  exl3::Hadamard128(y.data());
  for (int i = 0; i < 128; ++i) {
    double expected = 0;
    for (int j = 0; j < 128; ++j) expected += Sylvester(i, j) * x[j];
    EXPECT_NEAR(y[i], expected, 1e-6) << i;
  }
}

TEST(HadamardTest, IsItsOwnInverse) {
  std::vector<float> x(128);
  for (int i = 0; i < 128; ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
  std::vector<float> y = x;
  exl3::Hadamard128(y.data());
  exl3::Hadamard128(y.data());
  for (int i = 0; i < 128; ++i) EXPECT_NEAR(y[i], x[i], 1e-5) << i;
}

TEST(HadamardTest, RowsAreIndependentAndBlockwise) {
  std::vector<float> x(3 * 300, 7.0f);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 256; ++c) x[r * 300 + c] = static_cast<float>((r * 31 + c * 17) % 13);
  }
  std::vector<float> all = x;
  ASSERT_TRUE(cpu::Hadamard128(all.data(), 3, 256, 300).ok());
  for (int r = 0; r < 3; ++r) {
    std::vector<float> one(x.begin() + r * 300, x.begin() + r * 300 + 256);
    exl3::Hadamard128(one.data());
    exl3::Hadamard128(one.data() + 128);
    EXPECT_EQ(std::memcmp(one.data(), &all[r * 300], 256 * sizeof(float)), 0) << r;
    EXPECT_EQ(all[r * 300 + 299], 7.0f);  // Padding past cols untouched.
  }
  EXPECT_FALSE(cpu::Hadamard128(all.data(), 1, 100, 300).ok());
  EXPECT_FALSE(cpu::Hadamard128(all.data(), 1, 256, 200).ok());
  EXPECT_FALSE(cpu::Hadamard128(nullptr, 1, 128, 128).ok());
}

}  // namespace
}  // namespace twinspan
