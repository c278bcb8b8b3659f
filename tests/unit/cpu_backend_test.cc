// The CPU backend against the twinspan::cpu ops it forwards to: every op on the same seeded inputs
// (strided views included) gives the op's bits exactly; and its checks: ranges outside buffers,
// bad pitches, host pointers and foreign handles are InvalidArgument.
#include "kernels/cpu/cpu_backend.h"

#include <cstring>
#include <random>
#include <vector>

#include "common/exl3/weight.h"
#include "gtest/gtest.h"
#include "kernels/cpu/add.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/causal_conv1d.h"
#include "kernels/cpu/dynamic_conv.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/gated_delta_net.h"
#include "kernels/cpu/gated_rms_norm.h"
#include "kernels/cpu/kv_write.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/mul_sigmoid.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/swiglu.h"
#include "kernels/cpu/topk.h"
#include "tests/unit/formats_exl3_fixture.h"

namespace twinspan::cpu {
namespace {

using backend::Buffer;

std::vector<float> Random(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

bool Same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

class CpuBackendTest : public ::testing::Test {
 protected:
  std::unique_ptr<Buffer> Up(const std::vector<float>& values) {
    auto buffer = be_->UploadFloats(values);
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    return std::move(*buffer);
  }
  std::vector<float> Down(const Buffer& buffer) {
    std::vector<float> out(buffer.bytes() / sizeof(float));
    EXPECT_TRUE(be_->Download(out.data(), buffer, 0, buffer.bytes()).ok());
    return out;
  }
  std::unique_ptr<backend::LinearHandle> Handle(const LinearWeight& w) {
    auto handle = be_->UploadLinear(w);
    EXPECT_TRUE(handle.ok()) << handle.status();
    return std::move(*handle);
  }

  ThreadPool pool_{3};
  const Context ctx_{&pool_};
  std::unique_ptr<backend::Backend> be_ = NewCpuBackend(&pool_);
};

TEST_F(CpuBackendTest, MemoryRoundTripsAndCopy2DMovesStridedRows) {
  EXPECT_EQ(be_->name(), "cpu");
  const auto src = Random(5 * 12, 1);
  auto s = Up(src);
  auto d = be_->AllocateFloats(4 * 8);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(be_->Zero((*d)->data(), (*d)->bytes()).ok());
  // Rows 1..4, floats 2..7 of each 12-float row, into 8-float rows.
  ASSERT_TRUE(be_->Copy2D((*d)->floats(), 8 * 4, s->floats() + 12 + 2, 12 * 4, 6 * 4, 4).ok());
  const std::vector<float> got = Down(**d);
  for (int r = 0; r < 4; ++r) {
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(got[r * 8 + i], i < 6 ? src[(r + 1) * 12 + 2 + i] : 0.0f) << r << "," << i;
    }
  }
  std::vector<float> tail(3);
  ASSERT_TRUE(be_->Download(tail.data(), *s, 57 * 4, 12).ok());
  EXPECT_EQ(tail, std::vector<float>(src.end() - 3, src.end()));
  ASSERT_TRUE(be_->Copy((*d)->floats(), s->floats(), 8).ok());
  EXPECT_EQ(Down(**d)[1], src[1]);
  auto empty = be_->Allocate(0);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(be_->Synchronize().ok());
}

TEST_F(CpuBackendTest, EmbeddingEqualsTheCpuOp) {
  std::vector<uint16_t> raw(50 * 12);
  std::mt19937 rng(2);
  for (uint16_t& h : raw) h = static_cast<uint16_t>(0x3c00 + rng() % 0x0800);
  auto table = EmbeddingTable::FromRaw(EmbeddingDtype::kBF16, 50, 12, raw.data(), raw.size() * 2);
  ASSERT_TRUE(table.ok());
  const std::vector<int32_t> ids = {0, 49, 7, 7, 13};
  std::vector<float> want(ids.size() * 12);
  ASSERT_TRUE(Embedding(ctx_, *table, ids.data(), 5, want.data()).ok());
  auto handle = be_->UploadEmbedding(*table);
  ASSERT_TRUE(handle.ok());
  EXPECT_EQ((*handle)->rows(), 50);
  EXPECT_EQ((*handle)->dim(), 12);
  auto out = be_->AllocateFloats(want.size());
  ASSERT_TRUE(be_->Embedding(**handle, ids, (*out)->floats()).ok());
  EXPECT_TRUE(Same(Down(**out), want));
  const std::vector<int32_t> bad = {50};
  EXPECT_EQ(be_->Embedding(**handle, bad, (*out)->floats()).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CpuBackendTest, RmsNormEqualsTheCpuOpOnStridedRowsAndInPlace) {
  const int64_t rows = 6, dim = 45, x_stride = 50, y_stride = 47;
  const auto x = Random(rows * x_stride, 3), w = Random(dim, 4);
  std::vector<float> want(rows * y_stride, 0.0f);
  ASSERT_TRUE(
      RmsNorm(ctx_, x.data(), x_stride, rows, dim, w.data(), 1e-6f, want.data(), y_stride).ok());
  auto bx = Up(x), bw = Up(w), by = Up(std::vector<float>(rows * y_stride, 0.0f));
  ASSERT_TRUE(
      be_->RmsNorm(bx->floats(), x_stride, rows, dim, bw->floats(), 1e-6f, by->floats(), y_stride)
          .ok());
  EXPECT_TRUE(Same(Down(*by), want));
  std::vector<float> in_place = x;
  ASSERT_TRUE(RmsNorm(ctx_, in_place.data(), x_stride, rows, dim, w.data(), 1e-6f, in_place.data(),
                      x_stride)
                  .ok());
  ASSERT_TRUE(
      be_->RmsNorm(bx->floats(), x_stride, rows, dim, bw->floats(), 1e-6f, bx->floats(), x_stride)
          .ok());
  EXPECT_TRUE(Same(Down(*bx), in_place));
}

TEST_F(CpuBackendTest, AddRmsNormIsAddThenTheNormOfTheSum) {
  const int64_t rows = 4, dim = 45, y_stride = 47;
  std::vector<float> h = Random(rows * dim, 5);
  const auto delta = Random(rows * dim, 6), w = Random(dim, 7);
  auto bh = Up(h), bd = Up(delta), bw = Up(w), by = Up(std::vector<float>(rows * y_stride, 0.0f));
  ASSERT_TRUE(be_->AddRmsNorm(bh->floats(), bd->floats(), rows, dim, bw->floats(), 1e-6f,
                              by->floats(), y_stride)
                  .ok());
  ASSERT_TRUE(Add(ctx_, h.data(), delta.data(), rows * dim, h.data()).ok());
  std::vector<float> want(rows * y_stride, 0.0f);
  ASSERT_TRUE(RmsNorm(ctx_, h.data(), dim, rows, dim, w.data(), 1e-6f, want.data(), y_stride).ok());
  EXPECT_TRUE(Same(Down(*bh), h));
  EXPECT_TRUE(Same(Down(*by), want));
}

TEST_F(CpuBackendTest, LinearEqualsTheCpuOpForDenseAndExl3Weights) {
  const int64_t rows = 7, k = 256, n = 384, x_stride = 260, y_stride = 390;
  const auto x = Random(rows * x_stride, 5);
  auto dense = LinearWeight::Dense(n, k, Random(n * k, 6, 0.1f));
  ASSERT_TRUE(dense.ok());
  auto ckpt = testing::OpenTensors("cpu_backend_exl3.safetensors",
                                   testing::SyntheticTensors({.prefix = "w", .k = k, .n = n}));
  ASSERT_NE(ckpt, nullptr);
  auto exl3 = exl3::Weight::Load(*ckpt, "w");
  ASSERT_TRUE(exl3.ok()) << exl3.status();
  for (const LinearWeight& w : {*dense, LinearWeight::Exl3(*exl3)}) {
    SCOPED_TRACE(w.is_exl3() ? "exl3" : "dense");
    std::vector<float> want(rows * y_stride, 0.0f);
    ASSERT_TRUE(Linear(ctx_, x.data(), x_stride, rows, w, want.data(), y_stride).ok());
    auto handle = Handle(w);
    EXPECT_EQ(handle->in_features(), k);
    EXPECT_EQ(handle->out_features(), n);
    EXPECT_EQ(CpuLinearWeight(*handle)->is_exl3(), w.is_exl3());
    auto bx = Up(x), by = Up(std::vector<float>(rows * y_stride, 0.0f));
    ASSERT_TRUE(be_->Linear(bx->floats(), x_stride, rows, *handle, by->floats(), y_stride).ok());
    EXPECT_TRUE(Same(Down(*by), want));
  }
}

TEST_F(CpuBackendTest, LinearsWritesEachWeightsLinearSideBySide) {
  const int64_t rows = 3, k = 256, x_stride = 256, width = 384 + 128;
  const auto x = Random(rows * x_stride, 9);
  auto dense = LinearWeight::Dense(128, k, Random(128 * k, 10, 0.1f));
  ASSERT_TRUE(dense.ok());
  auto ckpt = testing::OpenTensors("cpu_backend_linears.safetensors",
                                   testing::SyntheticTensors({.prefix = "w", .k = k, .n = 384}));
  ASSERT_NE(ckpt, nullptr);
  auto exl3 = exl3::Weight::Load(*ckpt, "w");
  ASSERT_TRUE(exl3.ok()) << exl3.status();
  const LinearWeight e = LinearWeight::Exl3(*exl3);
  std::vector<float> want(rows * width, 0.0f);
  ASSERT_TRUE(Linear(ctx_, x.data(), x_stride, rows, e, want.data(), width).ok());
  ASSERT_TRUE(Linear(ctx_, x.data(), x_stride, rows, *dense, want.data() + 384, width).ok());
  auto he = Handle(e), hd = Handle(*dense);
  auto bx = Up(x), by = Up(std::vector<float>(rows * width, 0.0f));
  const backend::LinearOutput outs[] = {{he.get(), by->floats(), width},
                                        {hd.get(), by->floats() + 384, width}};
  ASSERT_TRUE(be_->Linears(bx->floats(), x_stride, rows, outs).ok());
  EXPECT_TRUE(Same(Down(*by), want));
  // The second output would write past y: refused, as Linear refuses it.
  const backend::LinearOutput past[] = {{he.get(), by->floats(), width},
                                        {hd.get(), by->floats() + 400, width}};
  EXPECT_TRUE(absl::IsInvalidArgument(be_->Linears(bx->floats(), x_stride, rows, past)));
  const backend::LinearOutput null[] = {{nullptr, by->floats(), width}};
  EXPECT_TRUE(absl::IsInvalidArgument(be_->Linears(bx->floats(), x_stride, rows, null)));
}

TEST_F(CpuBackendTest, RopeAndSwiGluEqualTheCpuOps) {
  const int64_t rows = 5, heads = 3, d = 16, rot = 8, stride = 52;
  const std::vector<int64_t> positions = {0, 1, 2, 130, 131};
  std::vector<float> cos(rows * rot / 2), sin(rows * rot / 2);
  ASSERT_TRUE(RopeAngles(positions.data(), rows, rot, 1e6, cos.data(), sin.data()).ok());
  auto x = Random(rows * stride, 7);
  auto bx = Up(x), bcos = Up(cos), bsin = Up(sin);
  ASSERT_TRUE(Rope(ctx_, x.data(), stride, rows, heads, d, rot, cos.data(), sin.data()).ok());
  ASSERT_TRUE(
      be_->Rope(bx->floats(), stride, rows, heads, d, rot, bcos->floats(), bsin->floats()).ok());
  EXPECT_TRUE(Same(Down(*bx), x));

  const int64_t inter = 24;  // Fused [gate | up] rows, as the MLP lays them out.
  auto gate_up = Random(rows * 2 * inter, 8);
  auto bg = Up(gate_up);
  ASSERT_TRUE(SwiGlu(ctx_, gate_up.data(), gate_up.data() + inter, 2 * inter, rows, inter,
                     gate_up.data(), 2 * inter)
                  .ok());
  ASSERT_TRUE(be_->SwiGlu(bg->floats(), bg->floats() + inter, 2 * inter, rows, inter, bg->floats(),
                          2 * inter)
                  .ok());
  EXPECT_TRUE(Same(Down(*bg), gate_up));
}

TEST_F(CpuBackendTest, AddAndMulSigmoidEqualTheCpuOps) {
  auto a = Random(1000, 9);
  const auto b = Random(1000, 10);
  auto ba = Up(a), bb = Up(b);
  ASSERT_TRUE(Add(ctx_, a.data(), b.data(), 1000, a.data()).ok());
  ASSERT_TRUE(be_->Add(ba->floats(), bb->floats(), 1000, ba->floats()).ok());
  EXPECT_TRUE(Same(Down(*ba), a));

  const int64_t rows = 12, d = 8;  // Gate = second half of each [query | gate] head.
  auto attn = Random(rows * d, 11);
  const auto q_proj = Random(rows * 2 * d, 12);
  auto battn = Up(attn), bq = Up(q_proj);
  ASSERT_TRUE(MulSigmoid(ctx_, attn.data(), d, q_proj.data() + d, 2 * d, rows, d).ok());
  ASSERT_TRUE(be_->MulSigmoid(battn->floats(), d, bq->floats() + d, 2 * d, rows, d).ok());
  EXPECT_TRUE(Same(Down(*battn), attn));
}

TEST_F(CpuBackendTest, KvWriteAndAttentionEqualTheCpuOps) {
  for (KvDtype dtype : {KvDtype::kF32, KvDtype::kBF16}) {
    SCOPED_TRACE(dtype == KvDtype::kF32 ? "f32" : "bf16");
    const int64_t heads = 4, kv_heads = 2, d = 8, rows = 140, kv_stride = 20, q_stride = 36;
    std::vector<int64_t> positions(rows);
    for (int64_t r = 0; r < rows; ++r) positions[r] = r;  // 140 keys cross a 128-key chunk.
    const auto k = Random(rows * kv_stride, 13), v = Random(rows * kv_stride, 14);
    const auto q = Random(rows * q_stride, 15);
    auto cache = KvCache::Create(dtype, 160, kv_heads, d);
    ASSERT_TRUE(cache.ok());
    ASSERT_TRUE(
        KvWrite(ctx_, *cache, positions.data(), rows, k.data(), kv_stride, v.data(), kv_stride)
            .ok());
    AttentionShape shape{
        .num_heads = heads, .num_kv_heads = kv_heads, .head_dim = d, .scale = 0.35f};
    std::vector<float> want(rows * heads * d);
    ASSERT_TRUE(Attention(ctx_, shape, q.data(), q_stride, positions.data(), rows, *cache, rows,
                          want.data(), heads * d)
                    .ok());

    auto handle = be_->NewKvCache(dtype, 160, kv_heads, d);
    ASSERT_TRUE(handle.ok());
    EXPECT_EQ((*handle)->capacity(), 160);
    EXPECT_EQ((*handle)->dtype(), dtype);
    auto bk = Up(k), bv = Up(v), bq = Up(q);
    auto out = be_->AllocateFloats(rows * heads * d);
    ASSERT_TRUE(
        be_->KvWrite(**handle, positions, bk->floats(), kv_stride, bv->floats(), kv_stride).ok());
    ASSERT_TRUE(be_->Attention(shape, bq->floats(), q_stride, positions, **handle, rows,
                               (*out)->floats(), heads * d)
                    .ok());
    EXPECT_TRUE(Same(Down(**out), want));
    const std::vector<int64_t> past = {160};
    EXPECT_EQ(be_->KvWrite(**handle, past, bk->floats(), kv_stride, bv->floats(), kv_stride).code(),
              absl::StatusCode::kOutOfRange);
  }
}

TEST_F(CpuBackendTest, CausalConvGatesAndGatedDeltaNetEqualTheCpuOps) {
  const GatedDeltaNetDims dims{.k_heads = 1, .v_heads = 2, .k_dim = 8, .v_dim = 4};
  const int64_t rows = 5, channels = dims.qkv_width(), kernel = 4;
  const auto x = Random(rows * channels, 16), weight = Random(channels * kernel, 17, 0.5f);
  auto conv_state = Random((kernel - 1) * channels, 18);
  std::vector<float> y(rows * channels);
  auto bx = Up(x), bw = Up(weight), bstate = Up(conv_state), by = Up(y);
  ASSERT_TRUE(CausalConv1d(ctx_, x.data(), rows, channels, weight.data(), kernel, conv_state.data(),
                           y.data())
                  .ok());
  ASSERT_TRUE(be_->CausalConv1d(bx->floats(), rows, channels, bw->floats(), kernel,
                                bstate->floats(), bstate->floats(), by->floats())
                  .ok());
  EXPECT_TRUE(Same(Down(*by), y));
  EXPECT_TRUE(Same(Down(*bstate), conv_state));

  const auto a = Random(rows * 2, 19), b = Random(rows * 2, 20);
  const std::vector<float> a_log = {0.5f, 1.5f}, dt_bias = {1.0f, 0.25f};
  std::vector<float> g(rows * 2), beta(rows * 2);
  auto ba = Up(a), bb = Up(b), balog = Up(a_log), bdt = Up(dt_bias), bg = Up(g), bbeta = Up(beta);
  ASSERT_TRUE(GatedDeltaNetGates(ctx_, a.data(), b.data(), 2, rows, 2, a_log.data(), dt_bias.data(),
                                 g.data(), beta.data())
                  .ok());
  ASSERT_TRUE(be_->GatedDeltaNetGates(ba->floats(), bb->floats(), 2, rows, 2, balog->floats(),
                                      bdt->floats(), bg->floats(), bbeta->floats())
                  .ok());
  EXPECT_TRUE(Same(Down(*bg), g));
  EXPECT_TRUE(Same(Down(*bbeta), beta));

  auto state = Random(dims.state_size(), 21, 0.1f);
  std::vector<float> out(rows * 8);
  auto bss = Up(state), bout = Up(out);
  ASSERT_TRUE(
      GatedDeltaNet(ctx_, y.data(), g.data(), beta.data(), rows, dims, state.data(), out.data())
          .ok());
  ASSERT_TRUE(be_->GatedDeltaNet(by->floats(), bg->floats(), bbeta->floats(), rows, dims,
                                 bss->floats(), bss->floats(), bout->floats())
                  .ok());
  EXPECT_TRUE(Same(Down(*bout), out));
  EXPECT_TRUE(Same(Down(*bss), state));

  const auto z = Random(rows * 8, 22), norm = Random(4, 23);
  auto bz = Up(z), bn = Up(norm);
  ASSERT_TRUE(
      GatedRmsNorm(ctx_, out.data(), z.data(), rows * 2, 4, norm.data(), 1e-6f, out.data()).ok());
  ASSERT_TRUE(be_->GatedRmsNorm(bout->floats(), bz->floats(), rows * 2, 4, bn->floats(), 1e-6f,
                                bout->floats())
                  .ok());
  EXPECT_TRUE(Same(Down(*bout), out));
}

TEST_F(CpuBackendTest, RecurrentOpsWriteTheEndStateElsewhereAndKeepTheStart) {
  const GatedDeltaNetDims dims{.k_heads = 1, .v_heads = 2, .k_dim = 8, .v_dim = 4};
  const int64_t rows = 3, channels = dims.qkv_width(), kernel = 4;
  const int64_t conv_floats = (kernel - 1) * channels;
  const auto x = Random(rows * channels, 40), weight = Random(channels * kernel, 41, 0.5f);
  const auto conv_start = Random(conv_floats, 42), state_start = Random(dims.state_size(), 43);
  const auto g = Random(rows * 2, 44, 0.1f), beta = Random(rows * 2, 45, 0.5f);
  auto bx = Up(x), bw = Up(weight), bg = Up(g), bbeta = Up(beta);
  // In place, the reference.
  auto conv_in_place = Up(conv_start), state_in_place = Up(state_start);
  auto y_in_place = Up(std::vector<float>(rows * channels));
  auto out_in_place = Up(std::vector<float>(rows * 8));
  ASSERT_TRUE(be_->CausalConv1d(bx->floats(), rows, channels, bw->floats(), kernel,
                                conv_in_place->floats(), conv_in_place->floats(),
                                y_in_place->floats())
                  .ok());
  ASSERT_TRUE(be_->GatedDeltaNet(y_in_place->floats(), bg->floats(), bbeta->floats(), rows, dims,
                                 state_in_place->floats(), state_in_place->floats(),
                                 out_in_place->floats())
                  .ok());
  // Out of place: the same outputs and end states, and the start states untouched.
  auto conv_in = Up(conv_start), state_in = Up(state_start);
  auto conv_out = Up(std::vector<float>(conv_floats)), state_out = Up(state_start);
  auto y = Up(std::vector<float>(rows * channels)), out = Up(std::vector<float>(rows * 8));
  ASSERT_TRUE(be_->CausalConv1d(bx->floats(), rows, channels, bw->floats(), kernel,
                                conv_in->floats(), conv_out->floats(), y->floats())
                  .ok());
  ASSERT_TRUE(be_->GatedDeltaNet(y->floats(), bg->floats(), bbeta->floats(), rows, dims,
                                 state_in->floats(), state_out->floats(), out->floats())
                  .ok());
  EXPECT_TRUE(Same(Down(*y), Down(*y_in_place)));
  EXPECT_TRUE(Same(Down(*out), Down(*out_in_place)));
  EXPECT_TRUE(Same(Down(*conv_out), Down(*conv_in_place)));
  EXPECT_TRUE(Same(Down(*state_out), Down(*state_in_place)));
  EXPECT_TRUE(Same(Down(*conv_in), conv_start));
  EXPECT_TRUE(Same(Down(*state_in), state_start));
  // A state_out that starts one float into state_in would read what the op already wrote.
  auto wide = Up(Random(dims.state_size() + 1, 46));
  const absl::Status overlap =
      be_->GatedDeltaNet(y->floats(), bg->floats(), bbeta->floats(), rows, dims, wide->floats(),
                         wide->floats() + 1, out->floats());
  EXPECT_EQ(overlap.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(overlap.message().find("state_out overlaps state_in"), std::string::npos) << overlap;
}

TEST_F(CpuBackendTest, DynamicConvAndTopKEqualTheCpuOps) {
  const DynamicConvParams p{
      .rows = 5, .channels = 16, .taps = 3, .group_size = 4, .dynamic_row_stride = 24};
  const auto x = Random(5 * 16, 24), base = Random(3 * 16, 25);
  const auto dynamic = Random(4 * 24 + 12, 26);  // One side of a [taps x groups x 2] projection.
  std::vector<float> want(5 * 16);
  ASSERT_TRUE(DynamicConv(ctx_, want, x, base, dynamic, p).ok());
  auto bx = Up(x), bbase = Up(base), bdyn = Up(dynamic);
  auto out = be_->AllocateFloats(5 * 16);
  ASSERT_TRUE(
      be_->DynamicConv((*out)->floats(), bx->floats(), bbase->floats(), bdyn->floats(), p).ok());
  EXPECT_TRUE(Same(Down(**out), want));
  DynamicConvParams bad = p;
  bad.group_size = 3;
  EXPECT_EQ(
      be_->DynamicConv((*out)->floats(), bx->floats(), bbase->floats(), bdyn->floats(), bad).code(),
      absl::StatusCode::kInvalidArgument);

  const TopKParams t{.rows = 3, .cols = 50, .k = 5};
  const auto logits = Random(150, 27);
  std::vector<float> values(15);
  std::vector<int32_t> indices(15);
  ASSERT_TRUE(TopK(ctx_, logits, values, indices, t).ok());
  auto bl = Up(logits);
  auto bvalues = be_->AllocateFloats(15);
  auto bindices = be_->Allocate(15 * sizeof(int32_t));
  ASSERT_TRUE(
      be_->TopK(bl->floats(), (*bvalues)->floats(), static_cast<int32_t*>((*bindices)->data()), t)
          .ok());
  EXPECT_TRUE(Same(Down(**bvalues), values));
  std::vector<int32_t> got_indices(15);
  ASSERT_TRUE(be_->Download(got_indices.data(), **bindices, 0, 15 * sizeof(int32_t)).ok());
  EXPECT_EQ(got_indices, indices);
}

TEST_F(CpuBackendTest, UploadAndDownloadOutsideTheBufferAreInvalidArgument) {
  auto b = be_->AllocateFloats(4);
  ASSERT_TRUE(b.ok());
  float host[5] = {};
  EXPECT_EQ(be_->Upload(**b, 0, host, 20).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(be_->Upload(**b, 12, host, 8).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(be_->Upload(**b, 17, host, 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(be_->Upload(**b, 0, nullptr, 4).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(be_->Upload(**b, 12, host, 4).ok());
  const absl::Status past = be_->Download(host, **b, 8, 12);
  EXPECT_EQ(past.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(past.message().find("outside a buffer of 16 bytes"), std::string::npos) << past;
  EXPECT_EQ(be_->Download(host, **b, ~size_t{0}, 2).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(be_->AllocateFloats(-1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CpuBackendTest, Copy2DWithBadPitchesRangesOrOverlapIsInvalidArgument) {
  auto a = be_->AllocateFloats(16);
  auto b = be_->AllocateFloats(16);
  ASSERT_TRUE(a.ok() && b.ok());
  float* pa = (*a)->floats();
  float* pb = (*b)->floats();
  const absl::Status pitch = be_->Copy2D(pa, 8, pb, 16, 12, 2);  // dst pitch below the width
  EXPECT_EQ(pitch.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(pitch.message().find("pitch"), std::string::npos) << pitch;
  EXPECT_EQ(be_->Copy2D(pa, 16, pb, 8, 12, 2).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(be_->Copy2D(pa, 16, pb, 16, 16, -1).code(), absl::StatusCode::kInvalidArgument);
  // Five rows of 16 bytes need 80 bytes; the buffers hold 64.
  EXPECT_EQ(be_->Copy2D(pa, 16, pb, 16, 16, 5).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(be_->Copy2D(pa + 1, 16, pb, 16, 16, 4).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(be_->Copy2D(pa, 16, pa + 2, 16, 16, 2).code(), absl::StatusCode::kInvalidArgument);
  float host[16] = {};
  EXPECT_EQ(be_->Copy(pa, host, 16).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(be_->Zero(pa + 8, 36).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(be_->Copy2D(pa, 16, pb, 16, 16, 4).ok());
  EXPECT_TRUE(be_->Copy2D(pa, 16, pb, 16, 0, 4).ok());  // Nothing to copy.
}

TEST_F(CpuBackendTest, OpsRefuseRangesOutsideTheirBuffersAndHostPointers) {
  auto w = LinearWeight::Dense(8, 16, Random(8 * 16, 28));
  ASSERT_TRUE(w.ok());
  auto handle = Handle(*w);
  auto x = be_->AllocateFloats(3 * 16);
  auto y = be_->AllocateFloats(3 * 8);
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_TRUE(be_->Linear((*x)->floats(), 16, 3, *handle, (*y)->floats(), 8).ok());
  const absl::Status rows = be_->Linear((*x)->floats(), 16, 4, *handle, (*y)->floats(), 8);
  EXPECT_EQ(rows.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(rows.message().find("Linear: x"), std::string::npos) << rows;
  EXPECT_EQ(be_->Linear((*x)->floats(), 16, 3, *handle, (*y)->floats() + 1, 8).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<float> host(3 * 8);
  EXPECT_EQ(be_->Linear((*x)->floats(), 16, 3, *handle, host.data(), 8).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(be_->Add((*y)->floats(), (*y)->floats(), 25, (*y)->floats()).code(),
            absl::StatusCode::kInvalidArgument);
  const std::vector<float> norm(16, 1.0f);
  EXPECT_EQ(be_->RmsNorm((*x)->floats(), 16, 3, 16, norm.data(), 1e-6f, (*x)->floats(), 16).code(),
            absl::StatusCode::kInvalidArgument);
  // A freed buffer's memory is no longer the backend's.
  float* stale = (*y)->floats();
  y->reset();
  EXPECT_EQ(be_->Zero(stale, 4).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CpuBackendTest, HandlesAndBuffersOfAnotherBackendAreInvalidArgument) {
  auto other = NewCpuBackend(nullptr);
  auto w = LinearWeight::Dense(4, 4, Random(16, 29));
  ASSERT_TRUE(w.ok());
  auto foreign_w = other->UploadLinear(*w);
  auto foreign_buffer = other->AllocateFloats(16);
  auto foreign_kv = other->NewKvCache(KvDtype::kF32, 4, 1, 4);
  ASSERT_TRUE(foreign_w.ok() && foreign_buffer.ok() && foreign_kv.ok());
  auto x = be_->AllocateFloats(16);
  auto y = be_->AllocateFloats(16);
  const absl::Status linear = be_->Linear((*x)->floats(), 4, 4, **foreign_w, (*y)->floats(), 4);
  EXPECT_EQ(linear.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(linear.message().find("not from this backend"), std::string::npos) << linear;
  float host[4];
  EXPECT_EQ(be_->Download(host, **foreign_buffer, 0, 16).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(be_->Copy((*x)->floats(), (*foreign_buffer)->floats(), 16).code(),
            absl::StatusCode::kInvalidArgument);
  const std::vector<int64_t> positions = {0};
  EXPECT_EQ(be_->KvWrite(**foreign_kv, positions, (*x)->floats(), 4, (*y)->floats(), 4).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(be_->UploadLinear(LinearWeight{}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CpuLinearWeight(**foreign_w)->out_features(), 4);
}

}  // namespace
}  // namespace twinspan::cpu
