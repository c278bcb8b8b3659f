// The CPU ops added for the Backend's op list (residual Add, the output gate's MulSigmoid,
// KvWrite, KvCopy): each against its plain definition, bit for bit, and their bad input.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/add.h"
#include "kernels/cpu/kv_cache.h"
#include "kernels/cpu/kv_copy.h"
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

// Every key and value of positions [first, first + rows) of kv head `head`, as floats.
std::vector<float> ReadAll(const KvCache& kv, int64_t first, int64_t rows) {
  std::vector<float> out;
  std::vector<float> row(kv.head_dim());
  for (int64_t p = first; p < first + rows; ++p) {
    for (int64_t h = 0; h < kv.kv_heads(); ++h) {
      kv.ReadKey(p, h, row.data());
      out.insert(out.end(), row.begin(), row.end());
      kv.ReadValue(p, h, row.data());
      out.insert(out.end(), row.begin(), row.end());
    }
  }
  return out;
}

TEST(KvCopyTest, CopiesARunOfPositionsBitForBitAndNothingElse) {
  for (KvDtype dtype : {KvDtype::kF32, KvDtype::kBF16}) {
    const int64_t heads = 2, dim = 8, row = heads * dim;
    auto src = KvCache::Create(dtype, 12, heads, dim);
    auto dst = KvCache::Create(dtype, 20, heads, dim);
    ASSERT_TRUE(src.ok() && dst.ok());
    const auto k = Random(20 * row, 7), v = Random(20 * row, 8);
    for (int64_t p = 0; p < 12; ++p) ASSERT_TRUE(src->Write(p, &k[p * row], &v[p * row]).ok());
    const std::vector<float> ones(row, 1.0f);
    for (int64_t p = 0; p < 20; ++p) ASSERT_TRUE(dst->Write(p, ones.data(), ones.data()).ok());
    ASSERT_TRUE(KvCopy(Context{}, *src, 3, *dst, 10, 5).ok());
    const std::vector<float> want = ReadAll(*src, 3, 5), got = ReadAll(*dst, 10, 5);
    ASSERT_EQ(want.size(), got.size());
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
    for (float x : ReadAll(*dst, 0, 10)) ASSERT_EQ(x, 1.0f);  // Before the run: untouched.
    for (float x : ReadAll(*dst, 15, 5)) ASSERT_EQ(x, 1.0f);  // After it.
    EXPECT_TRUE(KvCopy(Context{}, *src, 0, *dst, 0, 0).ok());
  }
}

TEST(KvCopyTest, RefusesRangesOutsideEitherCacheAndOtherShapes) {
  auto src = KvCache::Create(KvDtype::kBF16, 8, 2, 4);
  auto dst = KvCache::Create(KvDtype::kBF16, 8, 2, 4);
  auto f32 = KvCache::Create(KvDtype::kF32, 8, 2, 4);
  auto wide = KvCache::Create(KvDtype::kBF16, 8, 2, 8);
  ASSERT_TRUE(src.ok() && dst.ok() && f32.ok() && wide.ok());
  absl::Status s = KvCopy(Context{}, *src, 6, *dst, 0, 3);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("src positions [6, 9)"), std::string::npos) << s;
  s = KvCopy(Context{}, *src, 0, *dst, 7, 2);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("dst positions [7, 9)"), std::string::npos) << s;
  EXPECT_EQ(KvCopy(Context{}, *src, -1, *dst, 0, 1).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(KvCopy(Context{}, *src, 0, *dst, 0, -1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCopy(Context{}, *src, 0, *f32, 0, 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCopy(Context{}, *src, 0, *wide, 0, 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCopy(Context{}, *src, 0, *src, 4, 1).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinspan::cpu
