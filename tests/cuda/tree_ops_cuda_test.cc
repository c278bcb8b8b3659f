// GPU tests of the tree ops through the CUDA backend (kernels/cuda/{attention,causal_conv1d_tree,
// gated_delta_net_tree,gather_rows,candidate_selector}): every row of a tree window gets
// the bits the CUDA chain op gives the last row of its path (that is what keeps drafted == plain
// on the GPU), and the CPU backend's tree op within the chain op's own tolerance (the tests of
// attention, causal_conv1d and gated_delta_net state them; those are reused here). GatherRows is a
// copy (bit for bit); the selector's score table is the CPU op's bits.
// Trees: a best-first shape with branches at several depths; the 27B's Gated DeltaNet (register
// kernel, k_dim 128), the golden tiny model's (k_dim 64) and an odd one (column kernel).
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "kernels/backend/backend.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/tree_rows.h"
#include "kernels/cuda/cuda_backend.h"
#include "tests/cuda/gdn_inputs.h"
#include "tests/cuda/gdn_testing.h"

namespace twinspan::cuda {
namespace {

using testing::ExpectBitEqual;
using testing::ExpectClose;

const std::vector<int32_t> kTree = {-1, 0, 1, 0, 2, 1, 4, 3, 6, 2, 8, 5, 0, 12, 9};

class TreeOpsCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto gpu = NewCudaBackend({});
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    gpu_ = std::move(*gpu);
    cpu_ = cpu::NewCpuBackend(nullptr);
  }

  static std::unique_ptr<backend::Buffer> Put(backend::Backend& be, const std::vector<float>& v) {
    auto buffer = be.UploadFloats(v);
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    return std::move(*buffer);
  }
  static std::unique_ptr<backend::Buffer> Make(backend::Backend& be, int64_t n) {
    auto buffer = be.AllocateFloats(n);
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    return std::move(*buffer);
  }
  static std::vector<float> Get(backend::Backend& be, const backend::Buffer& b) {
    std::vector<float> out(b.bytes() / sizeof(float));
    EXPECT_TRUE(be.Download(out.data(), b, 0, b.bytes()).ok());
    return out;
  }
  // Rows `rows` of a [*, width] array, back to back.
  static std::vector<float> Pick(const std::vector<float>& a, int64_t width,
                                 const std::vector<int64_t>& rows) {
    std::vector<float> out;
    for (int64_t r : rows)
      out.insert(out.end(), a.begin() + r * width, a.begin() + (r + 1) * width);
    return out;
  }

  std::unique_ptr<backend::Backend> gpu_, cpu_;
};

TEST_F(TreeOpsCudaTest, GatedDeltaNetTreeRowsAreTheirPathsChainsBitForBit) {
  const int64_t rows = static_cast<int64_t>(kTree.size());
  for (const cpu::GatedDeltaNetDims& dims :
       {cpu::GatedDeltaNetDims{16, 48, 128, 128}, cpu::GatedDeltaNetDims{2, 6, 64, 64},
        cpu::GatedDeltaNetDims{2, 4, 16, 8}}) {
    SCOPED_TRACE(
        absl::StrFormat("dims %d/%d %dx%d", dims.k_heads, dims.v_heads, dims.k_dim, dims.v_dim));
    const testing::GdnInputs in = testing::MakeGdnInputs(dims, rows, 31);
    const int64_t out_width = dims.v_heads * dims.v_dim;
    auto qkv = Put(*gpu_, in.qkv), g = Put(*gpu_, in.g), beta = Put(*gpu_, in.beta);
    auto state = Put(*gpu_, in.state);
    auto out = Make(*gpu_, rows * out_width);
    ASSERT_TRUE(gpu_->GatedDeltaNetTree(qkv->floats(), g->floats(), beta->floats(), kTree, dims,
                                        state->floats(), out->floats())
                    .ok());
    const std::vector<float> tree = Get(*gpu_, *out);
    // The CPU backend checks that its ops read and write its own buffers.
    auto cq = Put(*cpu_, in.qkv), cg = Put(*cpu_, in.g), cb = Put(*cpu_, in.beta);
    auto cs = Put(*cpu_, in.state);
    auto cout = Make(*cpu_, rows * out_width);
    ASSERT_TRUE(cpu_->GatedDeltaNetTree(cq->floats(), cg->floats(), cb->floats(), kTree, dims,
                                        cs->floats(), cout->floats())
                    .ok());
    ExpectClose(Get(*cpu_, *cout), tree, {1e-5, 5e-5}, "against the CPU tree op");
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<int64_t> path = cpu::TreePath(kTree.data(), r);
      const int64_t n = static_cast<int64_t>(path.size());
      auto pq = Put(*gpu_, Pick(in.qkv, dims.qkv_width(), path));
      auto pg = Put(*gpu_, Pick(in.g, dims.v_heads, path));
      auto pb = Put(*gpu_, Pick(in.beta, dims.v_heads, path));
      auto s0 = Put(*gpu_, in.state), s1 = Make(*gpu_, dims.state_size());
      auto chain = Make(*gpu_, n * out_width);
      ASSERT_TRUE(gpu_->GatedDeltaNet(pq->floats(), pg->floats(), pb->floats(), n, dims,
                                      s0->floats(), s1->floats(), chain->floats())
                      .ok());
      const std::vector<float> want = Get(*gpu_, *chain);
      ExpectBitEqual(
          std::vector<float>(want.end() - out_width, want.end()),
          std::vector<float>(tree.begin() + r * out_width, tree.begin() + (r + 1) * out_width),
          absl::StrFormat("row %d", r));
    }
  }
}

TEST_F(TreeOpsCudaTest, CausalConv1dTreeRowsAreTheirPathsChainsBitForBit) {
  const int64_t rows = static_cast<int64_t>(kTree.size());
  for (const auto& [channels, kernel] : {std::pair<int64_t, int64_t>{10240, 4}, {37, 2}, {33, 1}}) {
    SCOPED_TRACE(absl::StrFormat("channels %d kernel %d", channels, kernel));
    std::mt19937 rng(7);
    const std::vector<float> x = testing::RandomNormal(rows * channels, 1.0f, rng);
    const std::vector<float> w = testing::RandomNormal(channels * kernel, 0.5f, rng);
    const std::vector<float> st =
        testing::RandomNormal(std::max<int64_t>(1, kernel - 1) * channels, 1.0f, rng);
    auto dx = Put(*gpu_, x), dw = Put(*gpu_, w), ds = Put(*gpu_, st);
    auto dy = Make(*gpu_, rows * channels);
    ASSERT_TRUE(gpu_->CausalConv1dTree(dx->floats(), kTree, channels, dw->floats(), kernel,
                                       ds->floats(), dy->floats())
                    .ok());
    const std::vector<float> tree = Get(*gpu_, *dy);
    auto cx = Put(*cpu_, x), cw = Put(*cpu_, w), cs = Put(*cpu_, st);
    auto cy = Make(*cpu_, rows * channels);
    ASSERT_TRUE(cpu_->CausalConv1dTree(cx->floats(), kTree, channels, cw->floats(), kernel,
                                       cs->floats(), cy->floats())
                    .ok());
    ExpectClose(Get(*cpu_, *cy), tree, {4e-6, 2e-6}, "against the CPU tree op");
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<int64_t> path = cpu::TreePath(kTree.data(), r);
      const int64_t n = static_cast<int64_t>(path.size());
      auto px = Put(*gpu_, Pick(x, channels, path));
      auto s0 = Put(*gpu_, st), s1 = Make(*gpu_, std::max<int64_t>(1, kernel - 1) * channels);
      auto py = Make(*gpu_, n * channels);
      ASSERT_TRUE(gpu_->CausalConv1d(px->floats(), n, channels, dw->floats(), kernel, s0->floats(),
                                     s1->floats(), py->floats())
                      .ok());
      const std::vector<float> want = Get(*gpu_, *py);
      ExpectBitEqual(
          std::vector<float>(want.end() - channels, want.end()),
          std::vector<float>(tree.begin() + r * channels, tree.begin() + (r + 1) * channels),
          absl::StrFormat("row %d", r));
    }
  }
}

// Context rows then the tree's rows written to a cache of `be`; returns the cache.
std::unique_ptr<backend::KvCacheHandle> Cache(backend::Backend& be, cpu::KvDtype dtype,
                                              int64_t capacity, int64_t kv_width,
                                              const std::vector<float>& k,
                                              const std::vector<float>& v,
                                              const std::vector<int64_t>& slots, int64_t kv_heads,
                                              int64_t d) {
  auto kv = be.NewKvCache(dtype, capacity, kv_heads, d);
  EXPECT_TRUE(kv.ok()) << kv.status();
  auto dk = be.UploadFloats(k), dv = be.UploadFloats(v);
  EXPECT_TRUE(dk.ok() && dv.ok());
  EXPECT_TRUE(be.KvWrite(**kv, slots, (*dk)->floats(), kv_width, (*dv)->floats(), kv_width).ok());
  EXPECT_TRUE(be.Synchronize().ok());
  return std::move(*kv);
}

TEST_F(TreeOpsCudaTest, TreeAttentionRowsAreTheirPathsChainsBitForBit) {
  const int64_t heads = 8, kv_heads = 2, d = 128, width = heads * d, kv_width = kv_heads * d;
  const int64_t rows = static_cast<int64_t>(kTree.size());
  const cpu::AttentionShape shape{.num_heads = heads,
                                  .num_kv_heads = kv_heads,
                                  .head_dim = d,
                                  .scale = 1.0f / std::sqrt(static_cast<float>(d)),
                                  .mask = cpu::AttentionMask::kCausal};
  for (const cpu::KvDtype dtype : {cpu::KvDtype::kBF16, cpu::KvDtype::kF32}) {
    for (const int64_t length : {5, 250, 1000}) {  // One chunk; across 256; many chunks (split).
      SCOPED_TRACE(
          absl::StrFormat("%s, context %d", dtype == cpu::KvDtype::kF32 ? "f32" : "bf16", length));
      std::mt19937 rng(static_cast<uint32_t>(length));
      const int64_t capacity = length + rows + 4;
      const std::vector<float> k = testing::RandomNormal((length + rows) * kv_width, 1.0f, rng);
      const std::vector<float> v = testing::RandomNormal((length + rows) * kv_width, 1.0f, rng);
      const std::vector<float> q = testing::RandomNormal(rows * width, 1.0f, rng);
      std::vector<int64_t> slots(length + rows);
      for (int64_t i = 0; i < length + rows; ++i) slots[i] = i;
      auto dq = Put(*gpu_, q);
      auto out = Make(*gpu_, rows * width);
      auto gpu_kv = Cache(*gpu_, dtype, capacity, kv_width, k, v, slots, kv_heads, d);
      ASSERT_TRUE(gpu_->TreeAttention(shape, dq->floats(), width, kTree, length, *gpu_kv,
                                      out->floats(), width)
                      .ok());
      const std::vector<float> tree = Get(*gpu_, *out);
      auto cpu_kv = Cache(*cpu_, dtype, capacity, kv_width, k, v, slots, kv_heads, d);
      auto cq = Put(*cpu_, q);
      auto cout = Make(*cpu_, rows * width);
      ASSERT_TRUE(cpu_->TreeAttention(shape, cq->floats(), width, kTree, length, *cpu_kv,
                                      cout->floats(), width)
                      .ok());
      ExpectClose(Get(*cpu_, *cout), tree, {1e-5, 1e-4}, "against the CPU tree op");
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<int64_t> chain_rows(length);  // The context, then the path's rows.
        for (int64_t i = 0; i < length; ++i) chain_rows[i] = i;
        for (int64_t row : cpu::TreePath(kTree.data(), r)) chain_rows.push_back(length + row);
        const int64_t n = static_cast<int64_t>(chain_rows.size());
        std::vector<int64_t> chain_slots(n);
        for (int64_t i = 0; i < n; ++i) chain_slots[i] = i;
        auto chain_kv = Cache(*gpu_, dtype, capacity, kv_width, Pick(k, kv_width, chain_rows),
                              Pick(v, kv_width, chain_rows), chain_slots, kv_heads, d);
        auto qr =
            Put(*gpu_, std::vector<float>(q.begin() + r * width, q.begin() + (r + 1) * width));
        auto chain = Make(*gpu_, width);
        const int64_t position = n - 1;
        ASSERT_TRUE(gpu_->Attention(shape, qr->floats(), width, absl::MakeConstSpan(&position, 1),
                                    *chain_kv, n, chain->floats(), width)
                        .ok());
        ExpectBitEqual(Get(*gpu_, *chain),
                       std::vector<float>(tree.begin() + r * width, tree.begin() + (r + 1) * width),
                       absl::StrFormat("row %d", r));
      }
    }
  }
}

// A kept path's K/V moved into place reads as if written there: attention over the moved cache
// equals attention over one written in that order, bit for bit.
TEST_F(TreeOpsCudaTest, GatherRowsPicksRows) {
  std::mt19937 rng(5);
  const std::vector<float> src = testing::RandomNormal(300 * 70, 1.0f, rng);
  std::vector<int64_t> rows;
  for (int i = 0; i < 260; ++i) rows.push_back((i * 37) % 300);  // Two launches.
  auto ds = Put(*gpu_, src);
  auto dd = Make(*gpu_, rows.size() * 64);
  ASSERT_TRUE(gpu_->GatherRows(ds->floats(), 70, rows, 64, dd->floats(), 64).ok());
  std::vector<float> want;
  for (int64_t r : rows) want.insert(want.end(), src.begin() + r * 70, src.begin() + r * 70 + 64);
  ExpectBitEqual(want, Get(*gpu_, *dd), "gathered rows");
  const std::vector<int64_t> negative = {-1};
  EXPECT_FALSE(gpu_->GatherRows(ds->floats(), 70, negative, 64, dd->floats(), 64).ok());
}

TEST_F(TreeOpsCudaTest, SelectorScoreTableIsTheCpuOpsBits) {
  const int64_t slots = 7, k = 16, rank = 64, vocab = 500;
  std::mt19937 rng(11);
  std::vector<int32_t> ids(slots * k);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % vocab);
  const std::vector<float> unary = testing::RandomNormal(slots * k, 2.0f, rng);
  const std::vector<float> hp = testing::RandomNormal(slots * rank, 1.0f, rng);
  const std::vector<float> pred = testing::RandomNormal(vocab * rank, 0.3f, rng);
  const std::vector<float> succ = testing::RandomNormal(vocab * rank, 0.3f, rng);
  const cpu::SelectorWalkParams params{.slots = slots, .top_k = k, .rank = rank, .anchor_id = 42};
  auto book = [&](const std::vector<float>& rows_data) {
    return cpu::CodebookView{.type = cpu::CodebookType::kF32,
                             .data = reinterpret_cast<const std::byte*>(rows_data.data()),
                             .rows = vocab,
                             .rank = rank};
  };
  std::vector<float> cpu_table(slots * k * k);
  ASSERT_TRUE(cpu::SelectorScoreTable({},
                                      {.candidate_ids = ids,
                                       .unary = unary,
                                       .hidden_projection = hp,
                                       .predecessor = book(pred),
                                       .successor = book(succ),
                                       .uniforms = {}},
                                      cpu_table, params)
                  .ok());
  testing::DeviceArray<int32_t> d_ids(ids);
  testing::DeviceArray<float> d_unary(unary), d_hp(hp), d_pred(pred), d_succ(succ),
      d_table(slots * k * k);
  auto device_book = [&](const testing::DeviceArray<float>& rows_data) {
    return cpu::CodebookView{.type = cpu::CodebookType::kF32,
                             .data = reinterpret_cast<const std::byte*>(rows_data.get()),
                             .rows = vocab,
                             .rank = rank};
  };
  ASSERT_TRUE(gpu_->SelectorScoreTable({.candidate_ids = d_ids.cspan(),
                                        .unary = d_unary.cspan(),
                                        .hidden_projection = d_hp.cspan(),
                                        .predecessor = device_book(d_pred),
                                        .successor = device_book(d_succ),
                                        .uniforms = {}},
                                       d_table.span(), params)
                  .ok());
  ASSERT_TRUE(gpu_->Synchronize().ok());
  ExpectBitEqual(cpu_table, d_table.Download(), "score table");
}

}  // namespace
}  // namespace twinspan::cuda
