// GPU tests of the CUDA backend (kernels/cuda/cuda_backend.h): its memory calls and their errors,
// the Gated DeltaNet and drafter ops against the CPU backend, foreign handles and buffers, EXL3
// weights and column views through UploadLinear, and backend parity: one attention + MLP layer
// issued op by op, the same code on NewCpuBackend and on the CUDA backend, over a prompt and then a
// verify window. Tolerances: the layer's logits rel_fro <= 1e-5 between the backends with f32 K/V
// and <= 1e-4 with bf16 K/V (a value next to a bf16 tie may round to the other neighbour on one
// backend); the Gated DeltaNet chain rel_fro <= 1e-5 with the conv state and DynamicConv bit for
// bit; EXL3 rel_fro <= 1e-5 (docs/cuda.md); a column view bit-equal to its parent's columns; TopK
// exact. Needs a GPU.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/exl3/weight.h"
#include "common/safetensors/half.h"
#include "gtest/gtest.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/kv_cache.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/topk.h"
#include "kernels/cuda/cuda_backend.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/unit/formats_exl3_fixture.h"

namespace twinspan::cuda {
namespace {

using testing::RandomFloats;
using testing::RelFro;

std::unique_ptr<backend::Backend> NewBackend() {
  auto b = NewCudaBackend({});
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? std::move(*b) : nullptr;
}

std::vector<float> Download(backend::Backend& b, const backend::Buffer& buf, size_t floats) {
  std::vector<float> out(floats);
  EXPECT_TRUE(b.Download(out.data(), buf, 0, floats * sizeof(float)).ok());
  return out;
}

TEST(CudaBackendTest, MemoryRoundTripsAndRefusesRangesOutsideABuffer) {
  auto b = NewBackend();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->name(), "cuda:0");
  const std::vector<float> values = RandomFloats(1000, 1);
  auto buf = b->UploadFloats(values);
  ASSERT_TRUE(buf.ok()) << buf.status();
  EXPECT_EQ(testing::BitMismatches(Download(*b, **buf, 1000), values), 0u);

  // Copy2D packs 10 rows of 30 floats (120 bytes) out of rows of 100 (400 bytes).
  auto packed = b->Allocate(300 * sizeof(float));
  ASSERT_TRUE(packed.ok());
  ASSERT_TRUE(b->Copy2D((*packed)->data(), 120, (*buf)->data(), 400, 120, 10).ok());
  const std::vector<float> got = Download(*b, **packed, 300);
  for (int r = 0; r < 10; ++r) {
    for (int i = 0; i < 30; ++i) ASSERT_EQ(got[r * 30 + i], values[r * 100 + i]);
  }
  ASSERT_TRUE(b->Zero((*packed)->data(), 300 * sizeof(float)).ok());
  for (float v : Download(*b, **packed, 300)) ASSERT_EQ(testing::Bits(v), 0u);

  float host[4];
  EXPECT_TRUE(absl::IsInvalidArgument(b->Upload(**buf, 3990, host, 16)));
  EXPECT_TRUE(absl::IsInvalidArgument(b->Download(host, **buf, 4000, 4)));
  EXPECT_TRUE(absl::IsInvalidArgument(b->Copy2D((*packed)->data(), 8, (*buf)->data(), 16, 12, 2)));
  auto huge = b->Allocate(size_t{1} << 50);
  EXPECT_TRUE(absl::IsResourceExhausted(huge.status())) << huge.status();
  EXPECT_NE(huge.status().message().find("1125899906842624 bytes"), std::string::npos)
      << huge.status();
  EXPECT_TRUE(b->Synchronize().ok());  // The failed allocation left no sticky error.

  CudaBackendOptions missing;
  missing.device = 1 << 20;
  EXPECT_TRUE(absl::IsInvalidArgument(NewCudaBackend(missing).status()));
}

// Uploads `values` to `b`; the buffer, or null after a test failure.
std::unique_ptr<backend::Buffer> Floats(backend::Backend& b, const std::vector<float>& values) {
  auto buffer = b.UploadFloats(values);
  EXPECT_TRUE(buffer.ok()) << buffer.status();
  return buffer.ok() ? std::move(*buffer) : nullptr;
}

// The Gated DeltaNet chain (conv, gates, recurrence, gated norm) and DynamicConv at the 27B's GDN
// head shapes, the same calls on both backends. Tolerances: conv state and DynamicConv bit for bit;
// the rest rel_fro <= 1e-5 (the cudagdn ops' own: expf ulps and the k_dim sum order).
TEST(CudaBackendTest, GatedDeltaNetAndDrafterOpsMatchTheCpuBackend) {
  auto g_be = NewBackend();
  ASSERT_NE(g_be, nullptr);
  const std::unique_ptr<backend::Backend> c_be = cpu::NewCpuBackend(nullptr);
  const cpu::GatedDeltaNetDims dims{2, 6, 128, 128};
  const int64_t rows = 9, channels = dims.qkv_width(), kernel = 4, v = dims.v_heads;
  const std::vector<float> x = RandomFloats(rows * channels, 301, 2.0f);
  const std::vector<float> weight = RandomFloats(channels * kernel, 302, 0.5f);
  const std::vector<float> conv_state = RandomFloats((kernel - 1) * channels, 303, 2.0f);
  const std::vector<float> a = RandomFloats(rows * v, 304, 2.0f), b = RandomFloats(rows * v, 305);
  const std::vector<float> a_log = RandomFloats(v, 306), dt_bias = RandomFloats(v, 307);
  const std::vector<float> state = RandomFloats(dims.state_size(), 308, 0.1f);
  const std::vector<float> z = RandomFloats(rows * v * dims.v_dim, 309, 3.0f);
  const std::vector<float> norm = RandomFloats(dims.v_dim, 310, 1.5f);
  struct Outputs {
    std::vector<float> conv_y, conv_state, g, beta, out, state_in, state, normed, dynamic;
  };
  const auto run = [&](backend::Backend& be) {
    Outputs o;
    auto dx = Floats(be, x), dw = Floats(be, weight), ds = Floats(be, conv_state);
    auto da = Floats(be, a), db = Floats(be, b), dal = Floats(be, a_log), ddt = Floats(be, dt_bias);
    auto dstate = Floats(be, state), dz = Floats(be, z), dnorm = Floats(be, norm);
    auto dstate_out = *be.AllocateFloats(dims.state_size());
    auto y = *be.AllocateFloats(rows * channels), g = *be.AllocateFloats(rows * v),
         beta = *be.AllocateFloats(rows * v), out = *be.AllocateFloats(rows * v * dims.v_dim),
         normed = *be.AllocateFloats(rows * v * dims.v_dim);
    EXPECT_TRUE(be.CausalConv1d(dx->floats(), rows, channels, dw->floats(), kernel, ds->floats(),
                                ds->floats(), y->floats())
                    .ok());
    EXPECT_TRUE(be.GatedDeltaNetGates(da->floats(), db->floats(), v, rows, v, dal->floats(),
                                      ddt->floats(), g->floats(), beta->floats())
                    .ok());
    // Out of place: the start state stays where it was.
    EXPECT_TRUE(be.GatedDeltaNet(y->floats(), g->floats(), beta->floats(), rows, dims,
                                 dstate->floats(), dstate_out->floats(), out->floats())
                    .ok());
    EXPECT_TRUE(be.GatedRmsNorm(out->floats(), dz->floats(), rows * v, dims.v_dim, dnorm->floats(),
                                1e-6f, normed->floats())
                    .ok());
    // DynamicConv over a block of 8 slots, 256 channels in groups of 16, 2 taps; the dynamic
    // coefficients are one side of a [8, 2 x 2 x 16] projection.
    const cpu::DynamicConvParams p{8, 256, 2, 16, 64};
    auto cx = Floats(be, RandomFloats(size_t{8} * 256, 311)),
         cbase = Floats(be, RandomFloats(512, 312));
    auto cdyn = Floats(be, RandomFloats(size_t{8} * 64, 313, 0.1f));
    auto cout = *be.AllocateFloats(int64_t{8} * 256);
    EXPECT_TRUE(
        be.DynamicConv(cout->floats(), cx->floats(), cbase->floats(), cdyn->floats(), p).ok());
    o.conv_y = Download(be, *y, rows * channels);
    o.conv_state = Download(be, *ds, conv_state.size());
    o.g = Download(be, *g, rows * v);
    o.beta = Download(be, *beta, rows * v);
    o.out = Download(be, *out, rows * v * dims.v_dim);
    o.state_in = Download(be, *dstate, state.size());
    o.state = Download(be, *dstate_out, state.size());
    o.normed = Download(be, *normed, rows * v * dims.v_dim);
    o.dynamic = Download(be, *cout, size_t{8} * 256);
    return o;
  };
  const Outputs want = run(*c_be), got = run(*g_be);
  EXPECT_LE(RelFro(got.conv_y, want.conv_y), 1e-5);
  EXPECT_EQ(testing::BitMismatches(got.conv_state, want.conv_state), 0u);
  EXPECT_LE(RelFro(got.g, want.g), 1e-5);
  EXPECT_LE(RelFro(got.beta, want.beta), 1e-5);
  EXPECT_LE(RelFro(got.out, want.out), 1e-5);
  EXPECT_LE(RelFro(got.state, want.state), 1e-5);
  EXPECT_EQ(testing::BitMismatches(got.state_in, state), 0u);
  EXPECT_EQ(testing::BitMismatches(want.state_in, state), 0u);
  EXPECT_LE(RelFro(got.normed, want.normed), 1e-5);
  EXPECT_EQ(testing::BitMismatches(got.dynamic, want.dynamic), 0u);
}

class ForeignLinear : public backend::LinearHandle {
 public:
  int64_t in_features() const override { return 4; }
  int64_t out_features() const override { return 4; }
};

TEST(CudaBackendTest, RefusesHandlesAndBuffersItDidNotMake) {
  auto b = NewBackend();
  ASSERT_NE(b, nullptr);
  auto x = b->Allocate(64);
  ASSERT_TRUE(x.ok());
  ForeignLinear foreign;
  absl::Status s = b->Linear((*x)->floats(), 4, 1, foreign, (*x)->floats(), 4);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  const std::unique_ptr<backend::Backend> c = cpu::NewCpuBackend(nullptr);
  auto host = c->Allocate(64);
  ASSERT_TRUE(host.ok());
  float f[4] = {};
  EXPECT_TRUE(absl::IsInvalidArgument(b->Upload(**host, 0, f, 16)));
  EXPECT_TRUE(absl::IsInvalidArgument(b->Download(f, **host, 0, 16)));
  auto cpu_kv = c->NewKvCache(cpu::KvDtype::kF32, 4, 1, 4);
  ASSERT_TRUE(cpu_kv.ok());
  const int64_t p0[] = {0};
  EXPECT_TRUE(
      absl::IsInvalidArgument(b->KvWrite(**cpu_kv, p0, (*x)->floats(), 4, (*x)->floats(), 4)));
}

TEST(CudaBackendTest, Exl3WeightsAndColumnViewsMatchTheCpuOp) {
  auto b = NewBackend();
  ASSERT_NE(b, nullptr);
  twinspan::testing::SyntheticLinear spec;
  spec.k = 512;
  spec.n = 640;
  spec.bits = 4;
  auto ckpt = twinspan::testing::OpenTensors("backend_exl3.safetensors",
                                             twinspan::testing::SyntheticTensors(spec));
  ASSERT_NE(ckpt, nullptr);
  auto w = exl3::Weight::Load(*ckpt, spec.prefix);
  ASSERT_TRUE(w.ok()) << w.status();
  auto view = w->columns(256, 256);
  ASSERT_TRUE(view.ok());
  const cpu::LinearWeight whole = cpu::LinearWeight::Exl3(*w),
                          part = cpu::LinearWeight::Exl3(*view);
  // A view before its stored matrix gets only its own blocks; after it, it shares the upload.
  auto alone = b->UploadLinear(part);
  ASSERT_TRUE(alone.ok()) << alone.status();
  auto dw = b->UploadLinear(whole);
  ASSERT_TRUE(dw.ok()) << dw.status();
  auto dv = b->UploadLinear(part);
  ASSERT_TRUE(dv.ok()) << dv.status();
  for (const int64_t rows : {1, 16, 64}) {
    const std::vector<float> x = twinspan::testing::RandomRows(rows, spec.k, 5 + rows);
    std::vector<float> want(rows * spec.n);
    ASSERT_TRUE(cpu::Linear({}, x.data(), rows, whole, want.data()).ok());
    auto dx = b->UploadFloats(x);
    auto dy = b->Allocate(rows * spec.n * sizeof(float));
    auto dz = b->Allocate(rows * 256 * sizeof(float));
    auto da = b->Allocate(rows * 256 * sizeof(float));
    ASSERT_TRUE(dx.ok() && dy.ok() && dz.ok() && da.ok());
    ASSERT_TRUE(b->Linear((*dx)->floats(), spec.k, rows, **dw, (*dy)->floats(), spec.n).ok());
    ASSERT_TRUE(b->Linear((*dx)->floats(), spec.k, rows, **dv, (*dz)->floats(), 256).ok());
    ASSERT_TRUE(b->Linear((*dx)->floats(), spec.k, rows, **alone, (*da)->floats(), 256).ok());
    const std::vector<float> y = Download(*b, **dy, rows * spec.n);
    const std::vector<float> z = Download(*b, **dz, rows * 256);
    EXPECT_EQ(testing::BitMismatches(Download(*b, **da, rows * 256), z), 0u) << rows;
    EXPECT_LE(RelFro(y, want), 1e-5) << rows;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < 256; ++j) {
        ASSERT_EQ(testing::Bits(z[r * 256 + j]), testing::Bits(y[r * spec.n + 256 + j]));
      }
    }
  }
}

TEST(CudaBackendTest, LinearsOfOneInputGiveEachWeightItsLinearsBits) {
  auto b = NewBackend();
  ASSERT_NE(b, nullptr);
  // Two EXL3 weights of one k and K (one launch), a dense one (alone), another K (alone), then
  // three Q4 weights (one launch).
  std::vector<exl3::Weight> exl3;
  std::vector<std::unique_ptr<Checkpoint>> ckpts;
  for (const auto& [n, bits] : std::vector<std::pair<int64_t, int>>{{640, 4}, {256, 4}, {384, 3}}) {
    twinspan::testing::SyntheticLinear spec;
    spec.k = 512;
    spec.n = n;
    spec.bits = bits;
    spec.seed = static_cast<uint32_t>(n + bits);
    ckpts.push_back(twinspan::testing::OpenTensors(absl::StrFormat("linears_%d.safetensors", n),
                                                   twinspan::testing::SyntheticTensors(spec)));
    ASSERT_NE(ckpts.back(), nullptr);
    auto w = exl3::Weight::Load(*ckpts.back(), spec.prefix);
    ASSERT_TRUE(w.ok()) << w.status();
    exl3.push_back(*std::move(w));
  }
  std::vector<std::unique_ptr<backend::LinearHandle>> handles;
  std::vector<cpu::LinearWeight> q4;
  for (const int64_t n : {300, 96, 1280}) {
    auto w = cpu::Q4Weight::Quantize("q4", n, 512,
                                     RandomFloats(n * 512, static_cast<uint32_t>(11 + n), 0.05f));
    ASSERT_TRUE(w.ok()) << w.status();
    q4.push_back(cpu::LinearWeight::Q4(*std::move(w)));
  }
  for (const cpu::LinearWeight& w :
       {cpu::LinearWeight::Exl3(exl3[0]), cpu::LinearWeight::Exl3(exl3[1]),
        *cpu::LinearWeight::Dense(128, 512, RandomFloats(size_t{128} * 512, 7)),
        cpu::LinearWeight::Exl3(exl3[2]), q4[0], q4[1], q4[2]}) {
    auto h = b->UploadLinear(w);
    ASSERT_TRUE(h.ok()) << h.status();
    handles.push_back(*std::move(h));
  }
  const int64_t width = 640 + 256 + 128 + 384 + 300 + 96 + 1280;
  for (const int64_t rows : {1, 16, 64}) {
    SCOPED_TRACE(rows);
    auto dx = b->UploadFloats(twinspan::testing::RandomRows(rows, 512, 9 + rows));
    auto together = b->AllocateFloats(rows * width);
    auto alone = b->AllocateFloats(rows * width);
    ASSERT_TRUE(dx.ok() && together.ok() && alone.ok());
    std::vector<backend::LinearOutput> outs;
    int64_t col = 0;
    for (const auto& h : handles) {
      ASSERT_TRUE(b->Linear((*dx)->floats(), 512, rows, *h, (*alone)->floats() + col, width).ok());
      outs.push_back({h.get(), (*together)->floats() + col, width});
      col += h->out_features();
    }
    ASSERT_TRUE(b->Linears((*dx)->floats(), 512, rows, outs).ok());
    EXPECT_EQ(testing::BitMismatches(Download(*b, **together, rows * width),
                                     Download(*b, **alone, rows * width)),
              0u);
  }
  auto x = b->AllocateFloats(512);
  auto y = b->AllocateFloats(640);
  ASSERT_TRUE(x.ok() && y.ok());
  ForeignLinear foreign;
  const backend::LinearOutput bad[] = {{handles[0].get(), (*y)->floats(), 640},
                                       {&foreign, (*y)->floats(), 4}};
  EXPECT_TRUE(absl::IsInvalidArgument(b->Linears((*x)->floats(), 512, 1, bad)));
  const backend::LinearOutput null[] = {{nullptr, (*y)->floats(), 640}};
  EXPECT_TRUE(absl::IsInvalidArgument(b->Linears((*x)->floats(), 512, 1, null)));
}

// ---- one layer, op by op ------------------------------------------------------------------------

constexpr int64_t kHidden = 256, kHeads = 4, kKvHeads = 2, kHeadDim = 64, kMlp = 512, kVocab = 1000,
                  kContext = 64;

cpu::LinearWeight Dense(int64_t n, int64_t k, uint32_t seed) {
  std::vector<float> w = RandomFloats(n * k, seed, 0.08f);
  for (float& v : w) v = BFloat16ToFloat(FloatToBFloat16(v));  // A bf16 checkpoint.
  return *cpu::LinearWeight::Dense(n, k, std::move(w));
}

struct Layer {
  cpu::EmbeddingTable embedding;
  cpu::LinearWeight q, gate, k, v, o, gate_up, down, head;
  std::vector<float> norm1, norm2, final_norm, q_norm, k_norm;
  cpu::AttentionShape shape;

  Layer() {
    std::vector<uint16_t> table(kVocab * kHidden);
    const std::vector<float> e = RandomFloats(table.size(), 201);
    for (size_t i = 0; i < table.size(); ++i) table[i] = FloatToBFloat16(e[i]);
    embedding = *cpu::EmbeddingTable::FromRaw(cpu::EmbeddingDtype::kBF16, kVocab, kHidden,
                                              table.data(), table.size() * 2);
    q = Dense(kHeads * kHeadDim, kHidden, 202);
    gate = Dense(kHeads * kHeadDim, kHidden, 203);
    k = Dense(kKvHeads * kHeadDim, kHidden, 204);
    v = Dense(kKvHeads * kHeadDim, kHidden, 205);
    o = Dense(kHidden, kHeads * kHeadDim, 206);
    gate_up = Dense(2 * kMlp, kHidden, 207);
    down = Dense(kHidden, kMlp, 208);
    head = Dense(kVocab, kHidden, 209);
    norm1 = RandomFloats(kHidden, 210, 1.5f);
    norm2 = RandomFloats(kHidden, 211, 1.5f);
    final_norm = RandomFloats(kHidden, 212, 1.5f);
    q_norm = RandomFloats(kHeadDim, 214, 1.5f);
    k_norm = RandomFloats(kHeadDim, 215, 1.5f);
    shape.num_heads = kHeads;
    shape.num_kv_heads = kKvHeads;
    shape.head_dim = kHeadDim;
    shape.scale = 0.125f;
  }
};

// The layer's weights on a backend.
struct BackendLayer {
  std::unique_ptr<backend::EmbeddingHandle> embedding;
  std::unique_ptr<backend::LinearHandle> q, gate, k, v, o, gate_up, down, head;
  std::unique_ptr<backend::Buffer> norm1, norm2, final_norm, q_norm, k_norm;

  BackendLayer(backend::Backend& b, const Layer& l) {
    embedding = *b.UploadEmbedding(l.embedding);
    q = *b.UploadLinear(l.q);
    gate = *b.UploadLinear(l.gate);
    k = *b.UploadLinear(l.k);
    v = *b.UploadLinear(l.v);
    o = *b.UploadLinear(l.o);
    gate_up = *b.UploadLinear(l.gate_up);
    down = *b.UploadLinear(l.down);
    head = *b.UploadLinear(l.head);
    norm1 = *b.UploadFloats(l.norm1);
    norm2 = *b.UploadFloats(l.norm2);
    final_norm = *b.UploadFloats(l.final_norm);
    q_norm = *b.UploadFloats(l.q_norm);
    k_norm = *b.UploadFloats(l.k_norm);
  }
};

// The layer op by op through `b`; any failed op fails the test. Returns the logits.
std::vector<float> BackendRun(backend::Backend& b, const Layer& l, const BackendLayer& w,
                              backend::KvCacheHandle& kv, const std::vector<int32_t>& ids,
                              int64_t first) {
  const int64_t rows = ids.size(), qw = kHeads * kHeadDim, kw = kKvHeads * kHeadDim;
  std::vector<int64_t> positions(rows);
  for (int64_t r = 0; r < rows; ++r) positions[r] = first + r;
  std::vector<float> cos(rows * kHeadDim / 2), sin(cos.size());
  EXPECT_TRUE(cpu::RopeAngles(positions.data(), rows, kHeadDim, 1e6, cos.data(), sin.data()).ok());
  auto buffer = [&](int64_t floats) { return std::move(*b.Allocate(floats * sizeof(float))); };
  auto dcos = *b.UploadFloats(cos), dsin = *b.UploadFloats(sin);
  auto h = buffer(rows * kHidden), x = buffer(rows * kHidden), q = buffer(rows * qw),
       g = buffer(rows * qw), k = buffer(rows * kw), v = buffer(rows * kw), a = buffer(rows * qw),
       o = buffer(rows * kHidden), gu = buffer(rows * 2 * kMlp), act = buffer(rows * kMlp),
       logits = buffer(rows * kVocab);
  EXPECT_TRUE(b.Embedding(*w.embedding, ids, h->floats()).ok());
  EXPECT_TRUE(
      b.RmsNorm(h->floats(), kHidden, rows, kHidden, w.norm1->floats(), 1e-6f, x->floats(), kHidden)
          .ok());
  EXPECT_TRUE(b.Linear(x->floats(), kHidden, rows, *w.q, q->floats(), qw).ok());
  EXPECT_TRUE(b.Linear(x->floats(), kHidden, rows, *w.gate, g->floats(), qw).ok());
  EXPECT_TRUE(b.Linear(x->floats(), kHidden, rows, *w.k, k->floats(), kw).ok());
  EXPECT_TRUE(b.Linear(x->floats(), kHidden, rows, *w.v, v->floats(), kw).ok());
  EXPECT_TRUE(b.RmsNorm(q->floats(), kHeadDim, rows * kHeads, kHeadDim, w.q_norm->floats(), 1e-6f,
                        q->floats(), kHeadDim)
                  .ok());
  EXPECT_TRUE(b.RmsNorm(k->floats(), kHeadDim, rows * kKvHeads, kHeadDim, w.k_norm->floats(), 1e-6f,
                        k->floats(), kHeadDim)
                  .ok());
  EXPECT_TRUE(
      b.Rope(q->floats(), qw, rows, kHeads, kHeadDim, kHeadDim, dcos->floats(), dsin->floats())
          .ok());
  EXPECT_TRUE(
      b.Rope(k->floats(), kw, rows, kKvHeads, kHeadDim, kHeadDim, dcos->floats(), dsin->floats())
          .ok());
  EXPECT_TRUE(b.KvWrite(kv, positions, k->floats(), kw, v->floats(), kw).ok());
  EXPECT_TRUE(
      b.Attention(l.shape, q->floats(), qw, positions, kv, first + rows, a->floats(), qw).ok());
  EXPECT_TRUE(b.MulSigmoid(a->floats(), qw, g->floats(), qw, rows, qw).ok());
  EXPECT_TRUE(b.Linear(a->floats(), qw, rows, *w.o, o->floats(), kHidden).ok());
  EXPECT_TRUE(b.Add(h->floats(), o->floats(), rows * kHidden, h->floats()).ok());
  EXPECT_TRUE(
      b.RmsNorm(h->floats(), kHidden, rows, kHidden, w.norm2->floats(), 1e-6f, x->floats(), kHidden)
          .ok());
  EXPECT_TRUE(b.Linear(x->floats(), kHidden, rows, *w.gate_up, gu->floats(), 2 * kMlp).ok());
  EXPECT_TRUE(
      b.SwiGlu(gu->floats(), gu->floats() + kMlp, 2 * kMlp, rows, kMlp, act->floats(), kMlp).ok());
  EXPECT_TRUE(b.Linear(act->floats(), kMlp, rows, *w.down, o->floats(), kHidden).ok());
  EXPECT_TRUE(b.Add(h->floats(), o->floats(), rows * kHidden, h->floats()).ok());
  EXPECT_TRUE(b.RmsNorm(h->floats(), kHidden, rows, kHidden, w.final_norm->floats(), 1e-6f,
                        x->floats(), kHidden)
                  .ok());
  EXPECT_TRUE(b.Linear(x->floats(), kHidden, rows, *w.head, logits->floats(), kVocab).ok());
  // TopK on the device against the CPU op on the same logits: exact.
  auto values = buffer(rows * 8);
  auto indices = b.Allocate(rows * 8 * sizeof(int32_t));
  EXPECT_TRUE(b.TopK(logits->floats(), values->floats(), static_cast<int32_t*>((*indices)->data()),
                     {rows, kVocab, 8})
                  .ok());
  std::vector<float> out = Download(b, *logits, rows * kVocab);
  std::vector<int32_t> got(rows * 8), want(rows * 8);
  std::vector<float> want_values(rows * 8);
  EXPECT_TRUE(b.Download(got.data(), **indices, 0, got.size() * sizeof(int32_t)).ok());
  EXPECT_TRUE(cpu::TopK({}, out, want_values, want, {rows, kVocab, 8}).ok());
  EXPECT_EQ(got, want);
  return out;
}

class CudaBackendLayerTest : public ::testing::TestWithParam<cpu::KvDtype> {};

TEST_P(CudaBackendLayerTest, PromptThenVerifyWindowMatchesTheCpuBackend) {
  auto b = NewBackend();
  ASSERT_NE(b, nullptr);
  cpu::ThreadPool pool(2);
  const std::unique_ptr<backend::Backend> c = cpu::NewCpuBackend(&pool);
  const Layer layer;
  const BackendLayer weights(*b, layer), cpu_weights(*c, layer);
  auto cpu_kv = c->NewKvCache(GetParam(), kContext, kKvHeads, kHeadDim);
  auto gpu_kv = b->NewKvCache(GetParam(), kContext, kKvHeads, kHeadDim);
  ASSERT_TRUE(cpu_kv.ok() && gpu_kv.ok()) << gpu_kv.status();
  const std::vector<int32_t> prompt = {5, 17, 999, 0, 3, 3, 250, 251, 600, 42, 7, 8};
  const std::vector<int32_t> window = {11, 12, 13, 14};
  // bf16 K/V: a value within an ulp of a bf16 tie may round the other way on one backend, moving
  // that key by 2^-8; allow 1e-4 there.
  const double tolerance = GetParam() == cpu::KvDtype::kF32 ? 1e-5 : 1e-4;
  const auto cpu_prompt = BackendRun(*c, layer, cpu_weights, **cpu_kv, prompt, 0);
  const auto gpu_prompt = BackendRun(*b, layer, weights, **gpu_kv, prompt, 0);
  EXPECT_LE(RelFro(gpu_prompt, cpu_prompt), tolerance);
  const auto cpu_window = BackendRun(*c, layer, cpu_weights, **cpu_kv, window, prompt.size());
  const auto gpu_window = BackendRun(*b, layer, weights, **gpu_kv, window, prompt.size());
  EXPECT_LE(RelFro(gpu_window, cpu_window), tolerance);
  EXPECT_TRUE(b->Synchronize().ok());
}

INSTANTIATE_TEST_SUITE_P(KvDtypes, CudaBackendLayerTest,
                         ::testing::Values(cpu::KvDtype::kF32, cpu::KvDtype::kBF16));

}  // namespace
}  // namespace twinspan::cuda
