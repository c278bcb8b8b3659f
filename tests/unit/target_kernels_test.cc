// CPU ops of the target: each against a plain double-precision reference, and the row/thread
// invariance the exactness contract rests on (bit for bit).
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/kv_cache.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/swiglu.h"

namespace twinspan::cpu {
namespace {

std::vector<float> RandomVector(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

bool BitEqual(const float* a, const float* b, size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

TEST(ParallelTest, CoversEveryIndexOnceForAnyThreadCount) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    std::vector<int> hits(1000, 0);
    pool.ParallelFor(1000, 7, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) ++hits[i];
    });
    for (int h : hits) ASSERT_EQ(h, 1) << threads << " threads";
  }
}

TEST(ParallelTest, ConcurrentCallersEachGetTheirWholeJob) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::vector<int64_t> sums(4, 0);
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      for (int repeat = 0; repeat < 50; ++repeat) {
        std::vector<int64_t> part(100, 0);
        pool.ParallelFor(100, 3, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) part[i] = i * (c + 1);
        });
        for (int64_t v : part) sums[c] += v;
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (int c = 0; c < 4; ++c) EXPECT_EQ(sums[c], 50 * 4950 * (c + 1)) << "caller " << c;
}

TEST(LinearTest, MatchesDoubleReference) {
  const int64_t rows = 5, k = 37, n = 21;  // Odd sizes exercise the tail lanes.
  const auto x = RandomVector(rows * k, 1);
  const auto w_values = RandomVector(n * k, 2);
  auto w = LinearWeight::Dense(n, k, w_values);
  ASSERT_TRUE(w.ok());
  std::vector<float> y(rows * n);
  ASSERT_TRUE(Linear(Context{}, x.data(), rows, *w, y.data()).ok());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int64_t i = 0; i < k; ++i) ref += double(x[r * k + i]) * w_values[j * k + i];
      EXPECT_NEAR(y[r * n + j], ref, 1e-4) << r << "," << j;
    }
  }
}

TEST(LinearTest, RowsAndThreadsNeverChangeARowsBits) {
  const int64_t rows = 11, k = 133, n = 70;
  const auto x = RandomVector(rows * k, 3);
  auto w = LinearWeight::Dense(n, k, RandomVector(n * k, 4));
  ASSERT_TRUE(w.ok());
  std::vector<float> all(rows * n);
  ThreadPool pool(3);
  ASSERT_TRUE(Linear(Context{&pool}, x.data(), rows, *w, all.data()).ok());
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> one(n);
    ASSERT_TRUE(Linear(Context{}, x.data() + r * k, 1, *w, one.data()).ok());
    EXPECT_TRUE(BitEqual(one.data(), all.data() + r * n, n)) << "row " << r;
  }
}

TEST(LinearTest, RejectsBadShapes) {
  EXPECT_FALSE(LinearWeight::Dense(2, 3, std::vector<float>(5)).ok());
  EXPECT_FALSE(LinearWeight::Dense(0, 3, {}).ok());
  auto w = LinearWeight::Dense(2, 3, std::vector<float>(6));
  ASSERT_TRUE(w.ok());
  float x[3] = {}, y[2];
  EXPECT_EQ(Linear(Context{}, x, 2, 1, *w, y, 2).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Linear(Context{}, x, 1, LinearWeight{}, y).code(), absl::StatusCode::kInvalidArgument);
}

TEST(RmsNormTest, MatchesDoubleReferenceInPlace) {
  const int64_t rows = 3, dim = 45;
  auto x = RandomVector(rows * dim, 5);
  const auto w = RandomVector(dim, 6);
  const auto original = x;
  ASSERT_TRUE(RmsNorm(Context{}, x.data(), rows, dim, w.data(), 1e-6f, x.data()).ok());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += double(original[r * dim + i]) * original[r * dim + i];
    const double inv = 1.0 / std::sqrt(ss / dim + 1e-6);
    for (int64_t i = 0; i < dim; ++i) {
      EXPECT_NEAR(x[r * dim + i], w[i] * original[r * dim + i] * inv, 1e-5);
    }
  }
  EXPECT_EQ(RmsNorm(Context{}, x.data(), rows, 0, w.data(), 1e-6f, x.data()).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RopeTest, RotatesOnlyTheRotaryDimsLikeNeoX) {
  const int64_t rows = 2, heads = 3, head_dim = 8, rot = 4;
  const int64_t positions[rows] = {0, 5};
  std::vector<float> cos(rows * rot / 2), sin(rows * rot / 2);
  ASSERT_TRUE(RopeAngles(positions, rows, rot, 10000.0, cos.data(), sin.data()).ok());
  auto x = RandomVector(rows * heads * head_dim, 7);
  const auto original = x;
  ASSERT_TRUE(Rope(Context{}, x.data(), heads * head_dim, rows, heads, head_dim, rot, cos.data(),
                   sin.data())
                  .ok());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* o = &original[(r * heads + h) * head_dim];
      const float* y = &x[(r * heads + h) * head_dim];
      for (int64_t i = 0; i < rot / 2; ++i) {
        const double angle = positions[r] * std::pow(10000.0, -2.0 * i / rot);
        EXPECT_NEAR(y[i], o[i] * std::cos(angle) - o[i + 2] * std::sin(angle), 1e-5);
        EXPECT_NEAR(y[i + 2], o[i + 2] * std::cos(angle) + o[i] * std::sin(angle), 1e-5);
      }
      for (int64_t i = rot; i < head_dim; ++i) EXPECT_EQ(y[i], o[i]);  // Pass-through dims.
    }
  }
  EXPECT_FALSE(RopeAngles(positions, rows, 3, 10000.0, cos.data(), sin.data()).ok());
  EXPECT_FALSE(
      Rope(Context{}, x.data(), heads * head_dim, rows, heads, head_dim, 10, cos.data(), sin.data())
          .ok());
}

TEST(SwiGluTest, SiluTimesUp) {
  const std::vector<float> gate = {-2.0f, 0.0f, 3.0f}, up = {1.5f, 2.0f, -1.0f};
  std::vector<float> out(3);
  ASSERT_TRUE(SwiGlu(Context{}, gate.data(), up.data(), 3, 1, 3, out.data(), 3).ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(out[i], gate[i] / (1.0 + std::exp(-gate[i])) * up[i], 1e-6);
  }
}

TEST(EmbeddingTest, ConvertsBf16RowsAndRejectsOutOfRangeIds) {
  const uint16_t raw[4] = {0x3f80, 0x4000, 0xbf80, 0x0000};  // bf16 1, 2, -1, 0.
  auto table = EmbeddingTable::FromRaw(EmbeddingDtype::kBF16, 2, 2, raw, sizeof(raw));
  ASSERT_TRUE(table.ok());
  const int32_t ids[2] = {1, 0};
  float out[4];
  ASSERT_TRUE(Embedding(Context{}, *table, ids, 2, out).ok());
  EXPECT_EQ(out[0], -1.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], 1.0f);
  EXPECT_EQ(out[3], 2.0f);
  const int32_t bad[1] = {2};
  EXPECT_EQ(Embedding(Context{}, *table, bad, 1, out).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(EmbeddingTable::FromRaw(EmbeddingDtype::kBF16, 2, 2, raw, 6).ok());
}

TEST(KvCacheTest, RejectsPositionsOutsideCapacity) {
  auto cache = KvCache::Create(KvDtype::kBF16, 4, 1, 2);
  ASSERT_TRUE(cache.ok());
  const float k[2] = {1.0f, 2.0f}, v[2] = {3.0f, 4.0f};
  EXPECT_TRUE(cache->Write(3, k, v).ok());
  EXPECT_EQ(cache->Write(4, k, v).code(), absl::StatusCode::kOutOfRange);
  float out[2];
  cache->ReadValue(3, 0, out);
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(out[1], 4.0f);
}

// Plain softmax attention in double for one (row, head).
std::vector<double> ReferenceAttention(const float* q, const KvCache& kv, int64_t kv_head,
                                       int64_t lo, int64_t hi, float scale) {
  const int64_t d = kv.head_dim();
  std::vector<double> scores;
  std::vector<float> key(d), value(d);
  double max_score = -1e300;
  for (int64_t k = lo; k < hi; ++k) {
    kv.ReadKey(k, kv_head, key.data());
    double s = 0;
    for (int64_t i = 0; i < d; ++i) s += double(q[i]) * key[i];
    scores.push_back(s * scale);
    max_score = std::max(max_score, scores.back());
  }
  double sum = 0;
  std::vector<double> out(d, 0.0);
  for (int64_t k = lo; k < hi; ++k) {
    const double p = std::exp(scores[k - lo] - max_score);
    sum += p;
    kv.ReadValue(k, kv_head, value.data());
    for (int64_t i = 0; i < d; ++i) out[i] += p * value[i];
  }
  for (double& o : out) o /= sum;
  return out;
}

class AttentionTest : public ::testing::TestWithParam<KvDtype> {};

TEST_P(AttentionTest, CausalMatchesReferenceAcrossChunksAndIsRowInvariant) {
  const int64_t heads = 4, kv_heads = 2, d = 16, keys = 300;  // 300 keys span three chunks.
  auto kv = KvCache::Create(GetParam(), keys, kv_heads, d);
  ASSERT_TRUE(kv.ok());
  const auto k = RandomVector(keys * kv_heads * d, 8), v = RandomVector(keys * kv_heads * d, 9);
  for (int64_t p = 0; p < keys; ++p) {
    ASSERT_TRUE(kv->Write(p, &k[p * kv_heads * d], &v[p * kv_heads * d]).ok());
  }
  const int64_t rows = 5;
  const int64_t positions[rows] = {295, 296, 297, 298, 299};
  const auto q = RandomVector(rows * heads * d, 10);
  AttentionShape shape{heads, kv_heads, d, 0.25f, AttentionMask::kCausal, 0};
  std::vector<float> out(rows * heads * d);
  ThreadPool pool(2);
  ASSERT_TRUE(Attention(Context{&pool}, shape, q.data(), heads * d, positions, rows, *kv, keys,
                        out.data(), heads * d)
                  .ok());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      const auto ref =
          ReferenceAttention(&q[(r * heads + h) * d], *kv, h / 2, 0, positions[r] + 1, 0.25f);
      for (int64_t i = 0; i < d; ++i) EXPECT_NEAR(out[(r * heads + h) * d + i], ref[i], 1e-5);
    }
    // The same row alone, with fewer keys in the cache call, gives the same bits.
    std::vector<float> one(heads * d);
    ASSERT_TRUE(Attention(Context{}, shape, &q[r * heads * d], heads * d, &positions[r], 1, *kv,
                          positions[r] + 1, one.data(), heads * d)
                    .ok());
    EXPECT_TRUE(BitEqual(one.data(), &out[r * heads * d], heads * d)) << "row " << r;
  }
}

TEST_P(AttentionTest, FullMaskWithWindowSeesKeysBothWays) {
  const int64_t d = 8, keys = 20;
  auto kv = KvCache::Create(GetParam(), keys, 1, d);
  ASSERT_TRUE(kv.ok());
  const auto k = RandomVector(keys * d, 11), v = RandomVector(keys * d, 12);
  for (int64_t p = 0; p < keys; ++p) ASSERT_TRUE(kv->Write(p, &k[p * d], &v[p * d]).ok());
  const int64_t position = 10;
  const auto q = RandomVector(d, 13);
  std::vector<float> out(d);
  AttentionShape shape{1, 1, d, 0.3f, AttentionMask::kFull, 4};
  ASSERT_TRUE(
      Attention(Context{}, shape, q.data(), d, &position, 1, *kv, keys, out.data(), d).ok());
  const auto ref = ReferenceAttention(q.data(), *kv, 0, 7, 14, 0.3f);  // |10 - k| < 4.
  for (int64_t i = 0; i < d; ++i) EXPECT_NEAR(out[i], ref[i], 1e-5);
  shape.window = 0;
  ASSERT_TRUE(
      Attention(Context{}, shape, q.data(), d, &position, 1, *kv, keys, out.data(), d).ok());
  const auto all = ReferenceAttention(q.data(), *kv, 0, 0, keys, 0.3f);
  for (int64_t i = 0; i < d; ++i) EXPECT_NEAR(out[i], all[i], 1e-5);
}

TEST_P(AttentionTest, RejectsRowsThatSeeNoKeysAndBadShapes) {
  auto kv = KvCache::Create(GetParam(), 8, 2, 4);
  ASSERT_TRUE(kv.ok());
  std::vector<float> q(3 * 4), out(3 * 4);
  const int64_t position = 5;
  AttentionShape shape{3, 2, 4, 0.5f, AttentionMask::kCausal, 0};  // 3 % 2 != 0.
  EXPECT_EQ(Attention(Context{}, shape, q.data(), 12, &position, 1, *kv, 6, out.data(), 12).code(),
            absl::StatusCode::kInvalidArgument);
  shape = {2, 2, 4, 0.5f, AttentionMask::kCausal, 0};
  EXPECT_EQ(Attention(Context{}, shape, q.data(), 8, &position, 1, *kv, 5, out.data(), 8).code(),
            absl::StatusCode::kInvalidArgument);  // Position 5 needs 6 keys.
  EXPECT_EQ(Attention(Context{}, shape, q.data(), 8, &position, 1, *kv, 9, out.data(), 8).code(),
            absl::StatusCode::kInvalidArgument);  // Past capacity.
}

INSTANTIATE_TEST_SUITE_P(KvDtypes, AttentionTest, ::testing::Values(KvDtype::kF32, KvDtype::kBF16));

}  // namespace
}  // namespace twinspan::cpu
