#include "kernels/cpu/block_attention.h"

#include <cmath>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace twinspan::cpu {
namespace {

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// Straightforward double-precision attention over an explicit visibility list.
std::vector<float> Naive(const std::vector<float>& q, const std::vector<float>& keys,
                         const std::vector<float>& values, const std::vector<int64_t>& key_pos,
                         const BlockAttentionParams& p) {
  const int64_t d = p.head_dim, nkv = p.n_kv_heads, group = p.n_heads / nkv;
  std::vector<float> out(p.block_rows * p.n_heads * d);
  for (int64_t i = 0; i < p.block_rows; ++i) {
    const int64_t qp = p.block_position + i;
    for (int64_t h = 0; h < p.n_heads; ++h) {
      std::vector<double> w(key_pos.size(), 0.0);
      double mx = -1e300;
      for (size_t j = 0; j < key_pos.size(); ++j) {
        const int64_t kp = key_pos[j];
        bool vis = !(p.causal && kp > qp);
        if (p.sliding_window > 0) {
          vis = vis && qp - kp < p.sliding_window && (p.causal || kp - qp < p.sliding_window);
        }
        if (!vis) {
          w[j] = -1;
          continue;
        }
        double dot = 0;
        for (int64_t t = 0; t < d; ++t) {
          dot += double(q[(i * p.n_heads + h) * d + t]) * keys[(j * nkv + h / group) * d + t];
        }
        w[j] = dot * p.scale;
        mx = std::max(mx, w[j]);
      }
      double total = 0;
      std::vector<double> acc(d, 0.0);
      for (size_t j = 0; j < key_pos.size(); ++j) {
        if (w[j] == -1) continue;
        const double e = std::exp(w[j] - mx);
        total += e;
        for (int64_t t = 0; t < d; ++t) acc[t] += e * values[(j * nkv + h / group) * d + t];
      }
      for (int64_t t = 0; t < d; ++t) out[(i * p.n_heads + h) * d + t] = acc[t] / total;
    }
  }
  return out;
}

struct Case {
  BlockAttentionParams p;
  std::vector<float> q, ck, cv, bk, bv;
  explicit Case(BlockAttentionParams params) : p(params) {
    const int64_t kv = p.n_kv_heads * p.head_dim;
    q = Random(p.block_rows * p.n_heads * p.head_dim, 1);
    ck = Random(p.context_rows * kv, 2);
    cv = Random(p.context_rows * kv, 3);
    bk = Random(p.block_rows * kv, 4);
    bv = Random(p.block_rows * kv, 5);
  }
  std::vector<float> Reference() const {
    std::vector<float> keys = ck, values = cv;
    keys.insert(keys.end(), bk.begin(), bk.end());
    values.insert(values.end(), bv.begin(), bv.end());
    std::vector<int64_t> pos;
    for (int64_t j = 0; j < p.context_rows; ++j) pos.push_back(p.context_position + j);
    for (int64_t j = 0; j < p.block_rows; ++j) pos.push_back(p.block_position + j);
    return Naive(q, keys, values, pos, p);
  }
  absl::StatusOr<std::vector<float>> Run() const {
    std::vector<float> out(q.size());
    absl::Status status = BlockAttention(out, q, ck, cv, bk, bv, p);
    if (!status.ok()) return status;
    return out;
  }
};

void ExpectNear(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 2e-5f) << i;
}

TEST(BlockAttentionTest, NonCausalGqaMatchesNaive) {
  Case c({.block_rows = 4,
          .context_rows = 7,
          .context_position = 0,
          .block_position = 7,
          .n_heads = 4,
          .n_kv_heads = 2,
          .head_dim = 8,
          .scale = 1.0f / std::sqrt(8.0f)});
  auto out = c.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear(*out, c.Reference());
}

TEST(BlockAttentionTest, SlidingWindowIsPerQueryAndBothWays) {
  Case c({.block_rows = 4,
          .context_rows = 6,
          .context_position = 10,
          .block_position = 16,
          .n_heads = 2,
          .n_kv_heads = 1,
          .head_dim = 4,
          .scale = 0.5f,
          .sliding_window = 3});
  auto out = c.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear(*out, c.Reference());
  // Windowed differs from unwindowed: the mask really cuts keys.
  Case wide = c;
  wide.p.sliding_window = 0;
  auto unmasked = wide.Run();
  ASSERT_TRUE(unmasked.ok());
  EXPECT_NE(*out, *unmasked);
}

TEST(BlockAttentionTest, CausalInBlockMatchesNaive) {
  Case c({.block_rows = 5,
          .context_rows = 3,
          .context_position = 0,
          .block_position = 3,
          .n_heads = 2,
          .n_kv_heads = 2,
          .head_dim = 4,
          .scale = 0.5f,
          .causal = true,
          .sliding_window = 4});
  auto out = c.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear(*out, c.Reference());
}

TEST(BlockAttentionTest, RowsDoNotDependOnTheirNeighboursInTheBatch) {
  Case c({.block_rows = 3,
          .context_rows = 5,
          .context_position = 0,
          .block_position = 5,
          .n_heads = 2,
          .n_kv_heads = 1,
          .head_dim = 4,
          .scale = 0.5f});
  auto all = c.Run();
  ASSERT_TRUE(all.ok());
  Case other = c;
  for (size_t i = 8; i < other.q.size(); ++i) other.q[i] += 1.0f;  // change rows 1 and 2
  auto changed = other.Run();
  ASSERT_TRUE(changed.ok());
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ((*all)[i], (*changed)[i]);
}

TEST(BlockAttentionTest, RejectsOverlappingPositions) {
  Case c({.block_rows = 2,
          .context_rows = 4,
          .context_position = 0,
          .block_position = 3,
          .n_heads = 1,
          .n_kv_heads = 1,
          .head_dim = 2,
          .scale = 1.0f});
  EXPECT_EQ(c.Run().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BlockAttentionTest, RejectsWrongSizes) {
  Case c({.block_rows = 2,
          .context_rows = 4,
          .context_position = 0,
          .block_position = 4,
          .n_heads = 2,
          .n_kv_heads = 1,
          .head_dim = 2,
          .scale = 1.0f});
  c.ck.pop_back();
  EXPECT_EQ(c.Run().status().code(), absl::StatusCode::kInvalidArgument);
  Case d({.block_rows = 2,
          .context_rows = 4,
          .context_position = 0,
          .block_position = 4,
          .n_heads = 3,
          .n_kv_heads = 2,
          .head_dim = 2,
          .scale = 1.0f});
  EXPECT_EQ(d.Run().status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinspan::cpu
