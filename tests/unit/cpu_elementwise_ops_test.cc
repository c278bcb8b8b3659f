// The CPU ops added for the Backend's op list (residual Add, the output gate's MulSigmoid,
// KvWrite): each against its plain definition, bit for bit, and their bad input.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/add.h"
#include "kernels/cpu/kv_cache.h"
#include "kernels/cpu/kv_write.h"
#include "kernels/cpu/mul_sigmoid.h"
#include "kernels/cpu/parallel.h"

namespace twinspan::cpu {
namespace {

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(AddTest, IsOneFp32AddPerElementInPlaceAndOnThreads) {
  ThreadPool pool(3);
  const int64_t n = 70001;  // Crosses the 16K task grain unevenly.
  auto a = Random(n, 1);
  const auto b = Random(n, 2);
  std::vector<float> want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = a[i] + b[i];
  ASSERT_TRUE(Add(Context{&pool}, a.data(), b.data(), n, a.data()).ok());
  EXPECT_EQ(std::memcmp(a.data(), want.data(), n * sizeof(float)), 0);
}

TEST(AddTest, RejectsNegativeCountsAndNullArrays) {
  float x = 1;
  EXPECT_EQ(Add(Context{}, &x, &x, -1, &x).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Add(Context{}, nullptr, &x, 1, &x).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Add(Context{}, nullptr, nullptr, 0, nullptr).ok());
}

TEST(MulSigmoidTest, GatesStridedRowsExactlyAsTheFormula) {
  ThreadPool pool(2);
  const int64_t rows = 37, dim = 16, x_stride = 20, gate_stride = 32;  // Gate beside a query.
  auto x = Random(rows * x_stride, 3);
  const auto gate = Random(rows * gate_stride, 4);
  auto want = x;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < dim; ++i) {
      float& v = want[r * x_stride + i];
      v = v * (1.0f / (1.0f + std::exp(-gate[r * gate_stride + i])));
    }
  }
  ASSERT_TRUE(
      MulSigmoid(Context{&pool}, x.data(), x_stride, gate.data(), gate_stride, rows, dim).ok());
  EXPECT_EQ(std::memcmp(x.data(), want.data(), x.size() * sizeof(float)), 0);  // Gaps untouched.
}

TEST(MulSigmoidTest, RejectsBadShapes) {
  float x[4] = {}, g[4] = {};
  EXPECT_EQ(MulSigmoid(Context{}, x, 2, g, 4, -1, 2).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MulSigmoid(Context{}, x, 2, g, 4, 1, 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MulSigmoid(Context{}, x, 1, g, 4, 1, 2).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MulSigmoid(Context{}, x, 2, g, 1, 1, 2).code(), absl::StatusCode::kInvalidArgument);
}

TEST(KvWriteTest, EqualsOneWritePerRowForBothDtypes) {
  for (KvDtype dtype : {KvDtype::kF32, KvDtype::kBF16}) {
    const int64_t heads = 2, dim = 8, stride = 24;  // Rows of 16 floats, 24 apart.
    auto got = KvCache::Create(dtype, 16, heads, dim);
    auto want = KvCache::Create(dtype, 16, heads, dim);
    ASSERT_TRUE(got.ok() && want.ok());
    const std::vector<int64_t> positions = {3, 4, 5, 9};
    const auto k = Random(positions.size() * stride, 5);
    const auto v = Random(positions.size() * stride, 6);
    ASSERT_TRUE(
        KvWrite(Context{}, *got, positions.data(), 4, k.data(), stride, v.data(), stride).ok());
    for (size_t r = 0; r < positions.size(); ++r) {
      ASSERT_TRUE(want->Write(positions[r], &k[r * stride], &v[r * stride]).ok());
    }
    for (int64_t p : positions) {
      for (int64_t h = 0; h < heads; ++h) {
        std::vector<float> a(dim), b(dim);
        got->ReadKey(p, h, a.data());
        want->ReadKey(p, h, b.data());
        EXPECT_EQ(std::memcmp(a.data(), b.data(), dim * sizeof(float)), 0) << "key " << p;
        got->ReadValue(p, h, a.data());
        want->ReadValue(p, h, b.data());
        EXPECT_EQ(std::memcmp(a.data(), b.data(), dim * sizeof(float)), 0) << "value " << p;
      }
    }
  }
}

TEST(KvWriteTest, APositionPastTheCacheWritesNothingAndIsOutOfRange) {
  auto cache = KvCache::Create(KvDtype::kF32, 4, 1, 4);
  ASSERT_TRUE(cache.ok());
  const std::vector<float> zeros(8, 0.0f), ones(8, 1.0f);
  const int64_t first[] = {0};
  ASSERT_TRUE(KvWrite(Context{}, *cache, first, 1, zeros.data(), 4, zeros.data(), 4).ok());
  const int64_t positions[] = {0, 4};
  const absl::Status status =
      KvWrite(Context{}, *cache, positions, 2, ones.data(), 4, ones.data(), 4);
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(status.message().find("position 4"), std::string::npos) << status;
  float key[4];
  cache->ReadKey(0, 0, key);
  EXPECT_EQ(key[0], 0.0f);  // Row 0 was not written either.
  EXPECT_EQ(KvWrite(Context{}, *cache, first, 1, ones.data(), 3, ones.data(), 4).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvWrite(Context{}, *cache, first, 1, nullptr, 4, ones.data(), 4).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinspan::cpu
