// GPU tests of the CUDA backend's drafter entries, each against the CPU backend (NewCpuBackend):
//  - SpanLinear over UploadSpanHead: the packed logits equal the full head's columns (Linear on
//    the same backend) bit for bit, whether the views share the uploaded head or were uploaded
//    alone, for the 27B's two spans at a 27B-shaped head, a single-column span and five spans
//    (two launches), 1/7/16 rows; against the CPU backend's SpanLinear rel_fro <= 1e-5 (the EXL3
//    linear's documented 3.4e-7);
//  - two heads of one name from two checkpoints are never confused (each keeps its own bits);
//    the 27B-shaped head is checked on the GPU only (the CPU op there takes minutes);
//  - SpanIds equals the CPU op, -1 kept, and maps a column outside the spans to -1;
//  - UploadLinear of a Q4 weight: Linear within the Q4 bound of docs/cuda.md against the CPU
//    backend (here the looser rel_fro <= 1e-5), bit for bit between 1 and 13 rows;
//  - SelectorWalk: greedy proposals and scores equal the CPU op's bits, sampled probabilities
//    within 1e-5 (rms + |ref|), with the uniforms in host memory;
//  - argument errors: bad strides and rows, a foreign span head, views of two matrices.
// Every output is poisoned with NaN first. Needs a GPU.
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/exl3/span_view.h"
#include "gtest/gtest.h"
#include "kernels/cpu/candidate_selector.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/q4_linear.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/drafter_cuda_util.h"

namespace twinspan::drafter {
namespace {

using cuda::testing::BitMismatches;
using cuda::testing::RandomFloats;
using cuda::testing::RelFro;
using testing::Cuda;
using testing::MakeExl3Head;
using testing::Poisoned;
using testing::Read;

// Packed span logits on `b` for `rows` rows of x, and the full head's logits from Linear.
struct HeadRun {
  std::vector<float> packed, full;
};

HeadRun RunHead(backend::Backend& b, const exl3::Weight& head,
                const std::vector<exl3::SpanView>& views, const std::vector<float>& x, int64_t rows,
                bool upload_full_first) {
  HeadRun out;
  std::unique_ptr<backend::LinearHandle> full;
  if (upload_full_first) {
    auto f = b.UploadLinear(cpu::LinearWeight::Exl3(head));
    EXPECT_TRUE(f.ok()) << f.status();
    if (!f.ok()) return out;
    full = std::move(*f);
  }
  auto spans = b.UploadSpanHead(views);
  EXPECT_TRUE(spans.ok()) << spans.status();
  if (!spans.ok()) return out;
  if (!full) {
    auto f = b.UploadLinear(cpu::LinearWeight::Exl3(head));
    EXPECT_TRUE(f.ok()) << f.status();
    if (!f.ok()) return out;
    full = std::move(*f);
  }
  const int64_t columns = (*spans)->columns(), stride = columns + 5;
  auto dx = b.UploadFloats(x);
  EXPECT_TRUE(dx.ok());
  auto packed = Poisoned(b, rows * stride * sizeof(float));
  auto logits = Poisoned(b, rows * head.n() * sizeof(float));
  EXPECT_TRUE(
      b.SpanLinear((*dx)->floats(), head.k(), rows, **spans, packed->floats(), stride).ok());
  EXPECT_TRUE(b.Linear((*dx)->floats(), head.k(), rows, *full, logits->floats(), head.n()).ok());
  const std::vector<float> all = Read<float>(b, *packed, rows * stride);
  for (int64_t r = 0; r < rows; ++r) {
    out.packed.insert(out.packed.end(), all.begin() + r * stride,
                      all.begin() + r * stride + columns);
    for (int64_t c = columns; c < stride; ++c) {
      EXPECT_TRUE(cuda::testing::IsPoison(all[r * stride + c])) << "padding written";
    }
  }
  out.full = Read<float>(b, *logits, rows * head.n());
  return out;
}

// The full head's logits at the spans' columns, packed.
std::vector<float> Columns(const std::vector<float>& full, int64_t n, int64_t rows,
                           const std::vector<exl3::ColumnSpan>& spans) {
  std::vector<float> out;
  for (int64_t r = 0; r < rows; ++r) {
    for (const exl3::ColumnSpan& s : spans) {
      out.insert(out.end(), full.begin() + r * n + s.begin, full.begin() + r * n + s.end);
    }
  }
  return out;
}

struct SpanCase {
  const char* name;
  int64_t k, n;
  int bits;
  std::vector<exl3::ColumnSpan> spans;
};

class SpanLinearCudaTest : public ::testing::TestWithParam<SpanCase> {};

TEST_P(SpanLinearCudaTest, PackedLogitsAreTheFullHeadsColumnsBitForBit) {
  const SpanCase& c = GetParam();
  testing::Exl3Head head = MakeExl3Head(std::string("span_") + c.name, c.k, c.n, c.bits, 31);
  ASSERT_GT(head.weight.n(), 0);
  auto views = exl3::MakeSpanViews(head.weight, c.spans);
  ASSERT_TRUE(views.ok()) << views.status();
  const std::unique_ptr<backend::Backend> cpu = cpu::NewCpuBackend(nullptr);
  for (const int64_t rows : {1, 7, 16}) {
    SCOPED_TRACE(std::string(c.name) + ", rows " + std::to_string(rows));
    const std::vector<float> x = RandomFloats(rows * c.k, 40 + rows, 2.0f);
    for (const bool shared : {true, false}) {
      SCOPED_TRACE(shared ? "views share the uploaded head" : "views uploaded alone");
      const std::unique_ptr<backend::Backend> gpu = Cuda();
      ASSERT_NE(gpu, nullptr);
      const HeadRun g = RunHead(*gpu, head.weight, *views, x, rows, shared);
      EXPECT_EQ(BitMismatches(g.packed, Columns(g.full, c.n, rows, c.spans)), 0u);
      if (shared && rows == 7 && c.n < 100000) {  // The CPU op on a 27B head takes minutes.
        const HeadRun h = RunHead(*cpu, head.weight, *views, x, rows, true);
        const double err = RelFro(g.packed, h.packed);
        RecordProperty("cuda_vs_cpu_rel_fro", std::to_string(err));
        EXPECT_LE(err, 1e-5);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Heads, SpanLinearCudaTest,
    ::testing::Values(
        // The 27B's two-span head (K = 6): [0, 98304) and the 288-id tail from a 64-block view.
        SpanCase{"two_span_27b", 5120, 248320, 6, {{0, 98304}, {248032, 248320}}},
        SpanCase{
            "single_column", 256, int64_t{80} * 128, 3, {{17, 130}, {5000, 5001}, {10239, 10240}}},
        SpanCase{"five_spans",
                 256,
                 int64_t{70} * 128,
                 4,
                 {{0, 5}, {1000, 1300}, {4000, 4001}, {6000, 7000}, {8900, 8960}}}),
    [](const ::testing::TestParamInfo<SpanCase>& info) { return info.param.name; });

TEST(SpanLinearCudaTest, TwoHeadsOfOneNameKeepTheirOwnBits) {
  testing::Exl3Head a = MakeExl3Head("same_name_a", 256, int64_t{66} * 128, 4, 1);
  testing::Exl3Head b = MakeExl3Head("same_name_b", 256, int64_t{66} * 128, 4, 2);
  const std::vector<exl3::ColumnSpan> spans = {{0, 1000}};
  auto va = exl3::MakeSpanViews(a.weight, spans), vb = exl3::MakeSpanViews(b.weight, spans);
  ASSERT_TRUE(va.ok() && vb.ok());
  const std::unique_ptr<backend::Backend> gpu = Cuda();
  ASSERT_NE(gpu, nullptr);
  const std::vector<float> x = RandomFloats(256, 3, 2.0f);
  // a's head stays uploaded while b's views and head of the same name "lm_head" arrive.
  auto keep = gpu->UploadLinear(cpu::LinearWeight::Exl3(a.weight));
  ASSERT_TRUE(keep.ok()) << keep.status();
  const HeadRun ra = RunHead(*gpu, a.weight, *va, x, 1, true);
  const HeadRun rb = RunHead(*gpu, b.weight, *vb, x, 1, false);
  EXPECT_EQ(BitMismatches(ra.packed, Columns(ra.full, a.weight.n(), 1, spans)), 0u);
  EXPECT_EQ(BitMismatches(rb.packed, Columns(rb.full, b.weight.n(), 1, spans)), 0u);
  EXPECT_GT(BitMismatches(ra.full, rb.full), 0u);
}

TEST(SpanLinearCudaTest, RefusesBadArguments) {
  testing::Exl3Head head = MakeExl3Head("span_bad", 256, int64_t{66} * 128, 4, 5);
  testing::Exl3Head other = MakeExl3Head("span_other", 256, int64_t{66} * 128, 4, 6);
  auto views = exl3::MakeSpanViews(head.weight, std::vector<exl3::ColumnSpan>{{0, 100}});
  auto others = exl3::MakeSpanViews(other.weight, std::vector<exl3::ColumnSpan>{{0, 100}});
  ASSERT_TRUE(views.ok() && others.ok());
  const std::unique_ptr<backend::Backend> gpu = Cuda();
  ASSERT_NE(gpu, nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(gpu->UploadSpanHead({}).status()));
  const std::vector<exl3::SpanView> mixed = {(*views)[0], (*others)[0]};
  EXPECT_TRUE(absl::IsInvalidArgument(gpu->UploadSpanHead(mixed).status()));
  auto spans = gpu->UploadSpanHead(*views);
  ASSERT_TRUE(spans.ok()) << spans.status();
  auto x = gpu->AllocateFloats(256);
  auto packed = gpu->AllocateFloats(100);
  ASSERT_TRUE(x.ok() && packed.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(
      gpu->SpanLinear((*x)->floats(), 256, 1, **spans, (*packed)->floats(), 99)));
  EXPECT_TRUE(absl::IsInvalidArgument(
      gpu->SpanLinear((*x)->floats(), 256, -1, **spans, (*packed)->floats(), 100)));
  const std::unique_ptr<backend::Backend> cpu = cpu::NewCpuBackend(nullptr);
  auto foreign = cpu->UploadSpanHead(*views);
  ASSERT_TRUE(foreign.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(
      gpu->SpanLinear((*x)->floats(), 256, 1, **foreign, (*packed)->floats(), 100)));
  EXPECT_TRUE(gpu->SpanLinear((*x)->floats(), 256, 1, **spans, (*packed)->floats(), 100).ok());
  EXPECT_TRUE(gpu->Synchronize().ok());
}

TEST(SpanIdsCudaTest, EqualsTheCpuOpAndMarksStrayColumns) {
  const std::vector<exl3::ColumnSpan> spans = {{0, 98304}, {248032, 248320}};
  std::vector<int32_t> columns;
  columns.reserve(1003);
  std::mt19937 rng(4);
  for (int i = 0; i < 1000; ++i) columns.push_back(static_cast<int32_t>(rng() % 98592));
  columns.push_back(-1);
  columns.push_back(98303);
  columns.push_back(98304);
  const std::unique_ptr<backend::Backend> cpu = cpu::NewCpuBackend(nullptr);
  const std::unique_ptr<backend::Backend> gpu = Cuda();
  ASSERT_NE(gpu, nullptr);
  const auto run = [&](backend::Backend& b, const std::vector<int32_t>& in) {
    auto d = b.Allocate(in.size() * sizeof(int32_t));
    EXPECT_TRUE(d.ok());
    EXPECT_TRUE(b.Upload(**d, 0, in.data(), in.size() * sizeof(int32_t)).ok());
    auto ids = Poisoned(b, in.size() * sizeof(int32_t));
    const int64_t n = static_cast<int64_t>(in.size());
    EXPECT_TRUE(b.SpanIds(spans, static_cast<const int32_t*>((*d)->data()), n,
                          static_cast<int32_t*>(ids->data()))
                    .ok());
    return Read<int32_t>(b, *ids, in.size());
  };
  const std::vector<int32_t> want = run(*cpu, columns), got = run(*gpu, columns);
  EXPECT_EQ(got, want);
  EXPECT_EQ(want[1000], -1);
  EXPECT_EQ(want[1002], 248032);
  // A column the host cannot check becomes -1 on the device.
  EXPECT_EQ(run(*gpu, {98592, -5, 7}), (std::vector<int32_t>{-1, -1, 7}));
  EXPECT_TRUE(absl::IsInvalidArgument(gpu->SpanIds({}, nullptr, 0, nullptr)));
  EXPECT_TRUE(absl::IsInvalidArgument(gpu->SpanIds(spans, nullptr, -1, nullptr)));
  EXPECT_TRUE(absl::IsInvalidArgument(gpu->SpanIds(spans, nullptr, 3, nullptr)));
  EXPECT_TRUE(gpu->Synchronize().ok());
}

TEST(Q4LinearBackendCudaTest, MatchesTheCpuBackendAndIsRowInvariant) {
  const int64_t n = 1280, k = 5120;  // The kernel projection's shape (2 sides x 2 taps x 320).
  const std::vector<float> values = RandomFloats(n * k, 8, 0.04f);
  auto q = cpu::Q4Weight::Quantize("proj", n, k, values);
  ASSERT_TRUE(q.ok()) << q.status();
  const cpu::LinearWeight w = cpu::LinearWeight::Q4(*q);
  const std::unique_ptr<backend::Backend> cpu = cpu::NewCpuBackend(nullptr);
  const std::unique_ptr<backend::Backend> gpu = Cuda();
  ASSERT_NE(gpu, nullptr);
  const auto run = [&](backend::Backend& b, const std::vector<float>& x, int64_t rows) {
    auto h = b.UploadLinear(w);
    EXPECT_TRUE(h.ok()) << h.status();
    EXPECT_EQ((*h)->out_features(), n);
    EXPECT_EQ((*h)->in_features(), k);
    auto dx = b.UploadFloats(x);
    auto y = Poisoned(b, rows * n * sizeof(float));
    EXPECT_TRUE(b.Linear((*dx)->floats(), k, rows, **h, y->floats(), n).ok());
    return Read<float>(b, *y, rows * n);
  };
  const std::vector<float> x = RandomFloats(13 * k, 9);
  const std::vector<float> g13 = run(*gpu, x, 13);
  EXPECT_LE(RelFro(g13, run(*cpu, x, 13)), 1e-5);
  for (const int64_t rows : {1, 8}) {
    const std::vector<float> head(x.begin(), x.begin() + rows * k);
    EXPECT_EQ(BitMismatches(run(*gpu, head, rows),
                            std::vector<float>(g13.begin(), g13.begin() + rows * n)),
              0u)
        << rows;
  }
}

TEST(SelectorWalkBackendCudaTest, EqualsTheCpuBackendWithHostUniforms) {
  const int64_t slots = 7, k = 16, rank = 256, vocab = 5000;
  std::vector<int32_t> ids(slots * k);
  std::mt19937 rng(2);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % vocab);
  const std::vector<float> unary = RandomFloats(slots * k, 3, 4.0f);
  const std::vector<float> hp = RandomFloats(slots * rank, 4);
  const std::vector<float> pred = RandomFloats(vocab * rank, 5, 0.35f);
  const std::vector<float> succ = RandomFloats(vocab * rank, 6, 0.35f);
  const std::vector<float> uniforms = {0.1f, 0.5f, 0.9f, 0.3f, 0.7f, 0.2f, 0.6f};
  struct Out {
    std::vector<int32_t> proposals;
    std::vector<float> scores, probabilities;
  };
  const auto run = [&](backend::Backend& b, float temperature) {
    const auto put = [&](const auto& v) {
      auto d = b.Allocate(v.size() * sizeof(v[0]));
      EXPECT_TRUE(d.ok());
      EXPECT_TRUE(b.Upload(**d, 0, v.data(), v.size() * sizeof(v[0])).ok());
      return std::move(*d);
    };
    auto d_ids = put(ids), d_unary = put(unary), d_hp = put(hp), d_pred = put(pred);
    auto d_succ = put(succ);
    auto d_out = Poisoned(b, slots * 4), d_scores = Poisoned(b, slots * k * 4);
    auto d_probs = Poisoned(b, slots * k * 4);
    const bool sampled = temperature > 0;
    const auto book = [&](const backend::Buffer& d) {
      return cpu::CodebookView{cpu::CodebookType::kF32, static_cast<const std::byte*>(d.data()),
                               vocab, rank};
    };
    const absl::Status s = b.SelectorWalk(
        {.candidate_ids = {static_cast<const int32_t*>(d_ids->data()), ids.size()},
         .unary = {d_unary->floats(), unary.size()},
         .hidden_projection = {d_hp->floats(), hp.size()},
         .predecessor = book(*d_pred),
         .successor = book(*d_succ),
         .uniforms = sampled ? std::span<const float>(uniforms) : std::span<const float>()},
        {.proposals = {static_cast<int32_t*>(d_out->data()), static_cast<size_t>(slots)},
         .scores = {d_scores->floats(), static_cast<size_t>(slots * k)},
         .probabilities = {d_probs->floats(), sampled ? static_cast<size_t>(slots * k) : 0}},
        {.slots = slots, .top_k = k, .rank = rank, .anchor_id = 12, .temperature = temperature});
    EXPECT_TRUE(s.ok()) << s;
    Out o;
    o.proposals = Read<int32_t>(b, *d_out, slots);
    o.scores = Read<float>(b, *d_scores, slots * k);
    if (sampled) o.probabilities = Read<float>(b, *d_probs, slots * k);
    return o;
  };
  const std::unique_ptr<backend::Backend> cpu = cpu::NewCpuBackend(nullptr);
  const std::unique_ptr<backend::Backend> gpu = Cuda();
  ASSERT_NE(gpu, nullptr);
  const Out greedy_cpu = run(*cpu, 0.0f), greedy_gpu = run(*gpu, 0.0f);
  EXPECT_EQ(greedy_gpu.proposals, greedy_cpu.proposals);
  EXPECT_EQ(BitMismatches(greedy_gpu.scores, greedy_cpu.scores), 0u);
  const Out sampled_cpu = run(*cpu, 0.8f), sampled_gpu = run(*gpu, 0.8f);
  EXPECT_EQ(sampled_gpu.proposals, sampled_cpu.proposals);
  EXPECT_EQ(BitMismatches(sampled_gpu.scores, sampled_cpu.scores), 0u);
  EXPECT_EQ(cuda::testing::OutsideTolerance(sampled_gpu.probabilities, sampled_cpu.probabilities,
                                            1e-5, 1e-5),
            0u);
}

}  // namespace
}  // namespace twinspan::drafter
