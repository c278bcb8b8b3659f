// The tree ops (kernels/cpu/tree_rows.h) against their chain twins: every row of a tree window
// must get the bits the chain op gives the last row of that row's path, and bad trees are refused.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/causal_conv1d.h"
#include "kernels/cpu/gated_delta_net.h"
#include "kernels/cpu/gather_rows.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/kv_cache.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/tree_rows.h"

namespace twinspan::cpu {
namespace {

std::vector<float> Random(size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// A best-first-shaped tree: a main chain with branches at several depths (rows in the order a
// drafter adds them, parents always earlier).
const std::vector<int32_t> kTree = {-1, 0, 1, 0, 2, 1, 4, 3, 6, 2, 8, 5};

void ExpectSameBits(const float* a, const float* b, size_t n, const std::string& what) {
  ASSERT_EQ(0, std::memcmp(a, b, n * sizeof(float))) << what;
}

TEST(TreeRowsTest, DepthsAndPaths) {
  const std::vector<int64_t> depth = TreeDepths(kTree.data(), kTree.size());
  EXPECT_EQ(depth, (std::vector<int64_t>{0, 1, 2, 1, 3, 2, 4, 2, 5, 3, 6, 3}));
  EXPECT_EQ(TreePath(kTree.data(), 10), (std::vector<int64_t>{0, 1, 2, 4, 6, 8, 10}));
  EXPECT_EQ(TreePath(kTree.data(), 0), (std::vector<int64_t>{0}));
}

TEST(TreeRowsTest, BadTreesAreRefusedNamingTheRow) {
  const std::vector<int32_t> no_root = {0, 0};
  EXPECT_EQ(CheckTreeParents("op", no_root.data(), 2).code(), absl::StatusCode::kInvalidArgument);
  const std::vector<int32_t> forward = {-1, 2, 0};
  const absl::Status status = CheckTreeParents("op", forward.data(), 3);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("row 1 has parent 2"), std::string::npos) << status;
  EXPECT_FALSE(CheckTreeParents("op", kTree.data(), 0).ok());
  EXPECT_FALSE(CheckTreeParents("op", nullptr, 3).ok());
  EXPECT_TRUE(CheckTreeParents("op", kTree.data(), kTree.size()).ok());
}

class TreeAttentionTest : public ::testing::TestWithParam<KvDtype> {};

// Context lengths that put the tree inside one key chunk, across a chunk boundary (128) and past
// one; no window and a window shorter than the tree's depth; every instruction set, one thread and
// several (rows split into runs that share the committed keys' chunks).
TEST_P(TreeAttentionTest, EveryRowEqualsTheChainOfItsPathBitForBit) {
  const int64_t heads = 4, kv_heads = 2, d = 16, width = heads * d, kv_width = kv_heads * d;
  const int64_t rows = static_cast<int64_t>(kTree.size());
  ThreadPool three(3);
  for (int64_t window : {0, 3}) {
    const AttentionShape shape{.num_heads = heads,
                               .num_kv_heads = kv_heads,
                               .head_dim = d,
                               .scale = 0.25f,
                               .mask = AttentionMask::kCausal,
                               .window = window};
    for (int64_t length : {5, 124, 250}) {
      const int64_t capacity = length + rows + 8;
      auto context_k = Random(length * kv_width, 1), context_v = Random(length * kv_width, 2);
      auto node_k = Random(rows * kv_width, 3), node_v = Random(rows * kv_width, 4);
      auto q = Random(rows * width, 5);
      absl::StatusOr<KvCache> tree_kv = KvCache::Create(GetParam(), capacity, kv_heads, d);
      ASSERT_TRUE(tree_kv.ok());
      for (int64_t p = 0; p < length; ++p) {
        ASSERT_TRUE(tree_kv->Write(p, &context_k[p * kv_width], &context_v[p * kv_width]).ok());
      }
      for (int64_t r = 0; r < rows; ++r) {
        ASSERT_TRUE(tree_kv->Write(length + r, &node_k[r * kv_width], &node_v[r * kv_width]).ok());
      }
      for (Isa isa : RunnableIsas()) {
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &three}) {
          const std::string where = std::string(IsaName(isa)) + (pool ? ", 3 threads" : "") +
                                    ", window " + std::to_string(window) + ", after " +
                                    std::to_string(length);
          std::vector<float> tree_out(rows * width);
          ASSERT_TRUE(TreeAttention(Context{pool, isa}, shape, q.data(), width, kTree.data(), rows,
                                    length, *tree_kv, tree_out.data(), width)
                          .ok());
          for (int64_t r = 0; r < rows; ++r) {
            // The chain: the context, then the path's rows at consecutive positions.
            const std::vector<int64_t> path = TreePath(kTree.data(), r);
            absl::StatusOr<KvCache> chain_kv = KvCache::Create(GetParam(), capacity, kv_heads, d);
            ASSERT_TRUE(chain_kv.ok());
            for (int64_t p = 0; p < length; ++p) {
              ASSERT_TRUE(
                  chain_kv->Write(p, &context_k[p * kv_width], &context_v[p * kv_width]).ok());
            }
            for (size_t i = 0; i < path.size(); ++i) {
              ASSERT_TRUE(chain_kv
                              ->Write(length + static_cast<int64_t>(i), &node_k[path[i] * kv_width],
                                      &node_v[path[i] * kv_width])
                              .ok());
            }
            const int64_t position = length + static_cast<int64_t>(path.size()) - 1;
            std::vector<float> chain_out(width);
            ASSERT_TRUE(Attention(Context{nullptr, isa}, shape, &q[r * width], width, &position, 1,
                                  *chain_kv, position + 1, chain_out.data(), width)
                            .ok());
            ExpectSameBits(&tree_out[r * width], chain_out.data(), width,
                           "row " + std::to_string(r) + ", " + where);
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, TreeAttentionTest,
                         ::testing::Values(KvDtype::kF32, KvDtype::kBF16));

TEST(TreeAttentionTest, RefusesTreesOutsideTheCacheAndNonCausalMasks) {
  absl::StatusOr<KvCache> kv = KvCache::Create(KvDtype::kF32, 8, 1, 4);
  ASSERT_TRUE(kv.ok());
  AttentionShape shape{.num_heads = 1, .num_kv_heads = 1, .head_dim = 4, .scale = 0.5f};
  std::vector<float> q(16), out(16);  // 4 rows of 4.
  const std::vector<int32_t> parents = {-1, 0, 0, 1};
  EXPECT_TRUE(
      TreeAttention(Context{}, shape, q.data(), 4, parents.data(), 4, 4, *kv, out.data(), 4).ok());
  EXPECT_EQ(
      TreeAttention(Context{}, shape, q.data(), 4, parents.data(), 4, 5, *kv, out.data(), 4).code(),
      absl::StatusCode::kInvalidArgument);  // Slots 5..8: past the capacity.
  const std::vector<int32_t> bad = {-1, 3, 0, 1};
  EXPECT_EQ(
      TreeAttention(Context{}, shape, q.data(), 4, bad.data(), 4, 0, *kv, out.data(), 4).code(),
      absl::StatusCode::kInvalidArgument);
  shape.mask = AttentionMask::kFull;
  EXPECT_EQ(
      TreeAttention(Context{}, shape, q.data(), 4, parents.data(), 4, 0, *kv, out.data(), 4).code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(CausalConv1dTreeTest, EveryRowEqualsTheChainOfItsPathBitForBit) {
  const int64_t channels = 37, rows = static_cast<int64_t>(kTree.size());
  for (int64_t kernel : {1, 2, 4}) {
    auto x = Random(rows * channels, 31);
    auto w = Random(channels * kernel, 32, 0.5f);
    auto state = Random((kernel - 1) * channels, 33);
    std::vector<float> y(rows * channels);
    ASSERT_TRUE(CausalConv1dTree(Context{}, x.data(), kTree.data(), rows, channels, w.data(),
                                 kernel, state.data(), y.data())
                    .ok());
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<int64_t> path = TreePath(kTree.data(), r);
      std::vector<float> chain_x;
      for (int64_t row : path)
        chain_x.insert(chain_x.end(), &x[row * channels], &x[(row + 1) * channels]);
      std::vector<float> chain_state = state, chain_y(chain_x.size());
      ASSERT_TRUE(CausalConv1d(Context{}, chain_x.data(), static_cast<int64_t>(path.size()),
                               channels, w.data(), kernel, chain_state.data(), chain_y.data())
                      .ok());
      ExpectSameBits(&y[r * channels], &chain_y[(path.size() - 1) * channels], channels,
                     "kernel " + std::to_string(kernel) + " row " + std::to_string(r));
    }
  }
}

TEST(GatedDeltaNetTreeTest, EveryRowEqualsTheChainOfItsPathBitForBit) {
  const GatedDeltaNetDims dims{.k_heads = 2, .v_heads = 4, .k_dim = 8, .v_dim = 6};
  const int64_t rows = static_cast<int64_t>(kTree.size()), width = dims.qkv_width();
  const int64_t out_width = dims.v_heads * dims.v_dim;
  auto qkv = Random(rows * width, 41);
  auto g = Random(rows * dims.v_heads, 42, 0.3f);
  for (float& x : g) x = -std::abs(x);
  auto beta = Random(rows * dims.v_heads, 43, 0.2f);
  for (float& x : beta) x = 0.5f + x;
  const auto state = Random(dims.state_size(), 44, 0.5f);
  std::vector<float> out(rows * out_width);
  ASSERT_TRUE(GatedDeltaNetTree(Context{}, qkv.data(), g.data(), beta.data(), kTree.data(), rows,
                                dims, state.data(), out.data())
                  .ok());
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<int64_t> path = TreePath(kTree.data(), r);
    const int64_t n = static_cast<int64_t>(path.size());
    std::vector<float> chain_qkv, chain_g, chain_beta;
    for (int64_t row : path) {
      chain_qkv.insert(chain_qkv.end(), &qkv[row * width], &qkv[(row + 1) * width]);
      chain_g.insert(chain_g.end(), &g[row * dims.v_heads], &g[(row + 1) * dims.v_heads]);
      chain_beta.insert(chain_beta.end(), &beta[row * dims.v_heads],
                        &beta[(row + 1) * dims.v_heads]);
    }
    std::vector<float> chain_state = state, chain_out(n * out_width);
    ASSERT_TRUE(GatedDeltaNet(Context{}, chain_qkv.data(), chain_g.data(), chain_beta.data(), n,
                              dims, chain_state.data(), chain_out.data())
                    .ok());
    ExpectSameBits(&out[r * out_width], &chain_out[(n - 1) * out_width], out_width,
                   "row " + std::to_string(r));
  }
  const std::vector<int32_t> bad = {-1, 1};
  EXPECT_EQ(GatedDeltaNetTree(Context{}, qkv.data(), g.data(), beta.data(), bad.data(), 2, dims,
                              state.data(), out.data())
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GatherRowsTest, PicksRowsAndRefusesBadArguments) {
  const auto src = Random(20, 51);
  const std::vector<int64_t> rows = {0, 3, 4};
  std::vector<float> dst(18, -1.0f);
  ASSERT_TRUE(GatherRows(Context{}, src.data(), 4, rows.data(), 3, 3, dst.data(), 6).ok());
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) EXPECT_EQ(dst[i * 6 + j], src[rows[i] * 4 + j]);
    EXPECT_EQ(dst[i * 6 + 3], -1.0f);  // Past the width: untouched.
  }
  const std::vector<int64_t> negative = {-1};
  EXPECT_FALSE(GatherRows(Context{}, src.data(), 4, negative.data(), 1, 3, dst.data(), 6).ok());
  EXPECT_FALSE(GatherRows(Context{}, src.data(), 2, rows.data(), 3, 3, dst.data(), 6).ok());
}

}  // namespace
}  // namespace twinspan::cpu
