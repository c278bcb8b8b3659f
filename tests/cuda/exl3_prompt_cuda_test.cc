// GPU tests of the EXL3 linear's prompt path (kernels/cuda/exl3_linear, from 65 rows): the weight
// decoded once into MMA fragments, in column slabs, must give every row bit for bit the bits it
// gets alone through the trellis path (row invariance) for every codebook, width, plan, row group,
// schedule and slab width, also back to back on one workspace; within 1e-5 of the CPU op; small
// workspaces fall back or fail as documented. Random inputs, outputs poisoned first. Needs a GPU:
// run through scripts/gpu-check.sh, not ctest.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/exl3/dequant.h"
#include "common/exl3/plan.h"
#include "common/exl3/span_view.h"
#include "common/exl3/weight.h"
#include "common/safetensors/half.h"
#include "gtest/gtest.h"
#include "kernels/cpu/exl3_linear.h"
#include "kernels/cuda/exl3_linear.cuh"
#include "kernels/cuda/exl3_span_linear.cuh"
#include "kernels/cuda/exl3_weight.h"
#include "tests/unit/formats_exl3_fixture.h"

namespace twinspan::cuda {
namespace {

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << cudaGetErrorString(cudaGetLastError())

// Owns one device allocation (at least 16 bytes, so an empty one is still a valid pointer).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (cudaMalloc(&ptr_, std::max<size_t>(bytes, 16)) != cudaSuccess) ptr_ = nullptr;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(ptr_); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
};

std::unique_ptr<DeviceBuffer> Upload(const std::vector<float>& host) {
  auto buf = std::make_unique<DeviceBuffer>(host.size() * sizeof(float));
  if (cudaMemcpy(buf->get(), host.data(), buf->bytes(), cudaMemcpyHostToDevice) != cudaSuccess)
    ADD_FAILURE() << "upload failed";
  return buf;
}

// A synthetic EXL3 linear, loaded as exl3::Weight and uploaded.
struct Linear {
  std::unique_ptr<Checkpoint> checkpoint;
  exl3::Weight weight;
  DeviceExl3Weight device;
  Exl3DeviceWeight view;
};

std::unique_ptr<Linear> MakeLinear(int64_t k, int64_t n, int bits, exl3::Codebook cb, bool bias,
                                   uint32_t seed) {
  testing::SyntheticLinear spec;
  spec.k = k;
  spec.n = n;
  spec.bits = bits;
  spec.codebook = cb;
  spec.bias = bias;
  spec.seed = seed;
  auto l = std::make_unique<Linear>();
  l->checkpoint = testing::OpenTensors(absl::StrFormat("prompt_%d.safetensors", seed),
                                       testing::SyntheticTensors(spec));
  if (!l->checkpoint) return nullptr;
  auto w = exl3::Weight::Load(*l->checkpoint, spec.prefix);
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return nullptr;
  l->weight = *w;
  auto d = DeviceExl3Weight::Upload(l->weight);
  EXPECT_TRUE(d.ok()) << d.status();
  if (!d.ok()) return nullptr;
  l->device = std::move(*d);
  auto v = l->device.View(l->weight);
  EXPECT_TRUE(v.ok()) << v.status();
  if (!v.ok()) return nullptr;
  l->view = *v;
  return l;
}

// Context knobs of one run.
struct Knobs {
  int prompt = 0;  // Context::exl3_prompt.
  int schedule = 0, rotation_kernel = 0, blocks_per_sm = 0, item_tiles = 0;
};

// A zeroed workspace of `bytes` (the counters must start at zero) and its context.
struct Workspace {
  explicit Workspace(size_t bytes) : buffer(bytes) {
    if (cudaMemset(buffer.get(), 0, std::max<size_t>(bytes, 16)) != cudaSuccess)
      ADD_FAILURE() << "workspace memset failed";
  }
  Context context(const Knobs& knobs = {}) const {
    Context ctx;
    ctx.workspace = buffer.get();
    ctx.workspace_bytes = buffer.bytes();
    ctx.exl3_prompt = knobs.prompt;
    ctx.exl3_schedule = knobs.schedule;
    ctx.exl3_rotation_kernel = knobs.rotation_kernel;
    ctx.exl3_blocks_per_sm = knobs.blocks_per_sm;
    ctx.exl3_item_tiles = knobs.item_tiles;
    return ctx;
  }
  DeviceBuffer buffer;
};

// The first `rows` rows of x_dev through Exl3Linear on a fresh workspace of `ws_bytes` bytes
// (Exl3LinearWorkspaceBytes when 0), into a poisoned output; its status on failure.
absl::StatusOr<std::vector<float>> RunRows(const Exl3DeviceWeight& w, const float* x_dev,
                                           int64_t rows, size_t ws_bytes = 0,
                                           const Knobs& knobs = {}) {
  Workspace ws(ws_bytes ? ws_bytes : Exl3LinearWorkspaceBytes(w, rows));
  DeviceBuffer yd(rows * w.n * sizeof(float));
  if (cudaMemset(yd.get(), 0xFF, yd.bytes()) != cudaSuccess)  // NaN where nothing is written.
    return absl::InternalError("poison failed");
  const absl::Status s = Exl3Linear(ws.context(knobs), x_dev, w.k, rows, w, yd.as<float>(), w.n);
  if (!s.ok()) return s;
  std::vector<float> y(rows * w.n);
  if (cudaMemcpy(y.data(), yd.get(), yd.bytes(), cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaDeviceSynchronize() != cudaSuccess)
    return absl::InternalError(cudaGetErrorString(cudaGetLastError()));
  return y;
}

// Each of the first `rows` rows alone (1-row launches through the trellis path).
std::vector<float> Solo(const Exl3DeviceWeight& w, const float* x_dev, int64_t rows) {
  Workspace ws(Exl3LinearWorkspaceBytes(w, 1));
  DeviceBuffer yd(rows * w.n * sizeof(float));
  EXPECT_EQ(cudaMemset(yd.get(), 0xFF, yd.bytes()), cudaSuccess);
  for (int64_t r = 0; r < rows; ++r) {
    const absl::Status s = Exl3Linear(ws.context({.prompt = -1}), x_dev + r * w.k, w.k, 1, w,
                                      yd.as<float>() + r * w.n, w.n);
    EXPECT_TRUE(s.ok()) << s;
  }
  std::vector<float> y(rows * w.n);
  EXPECT_EQ(cudaMemcpy(y.data(), yd.get(), yd.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  for (float v : y) EXPECT_TRUE(std::isfinite(v)) << "solo row left unwritten";
  return y;
}

// The first row of `got` that differs from `want` in any bit, or -1.
int64_t FirstDifferentRow(const std::vector<float>& got, const std::vector<float>& want,
                          int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r)
    if (std::memcmp(got.data() + r * n, want.data() + r * n, n * sizeof(float)) != 0) return r;
  return -1;
}

double RelFro(const float* got, const float* want, int64_t count) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

constexpr exl3::Codebook kCodebooks[] = {exl3::Codebook::k3Inst, exl3::Codebook::kMcg,
                                         exl3::Codebook::kMul1};

// The fragments a prompt leaves in the workspace (its last k * n * 2 bytes when the whole weight
// fits one slab) are the CPU decode's fp16 values in the A-fragment order of exl3_layout.h: tile t
// of lane l (group gid = l / 4, tig = l % 4), word i holds k offsets 2 tig + 8 (i / 2) + {0, 1} of
// column gid + 8 (i % 2).
TEST(Exl3PromptCuda, DecodesEachTileIntoTheWorkspaceAsTheCpuDecodes) {
  for (exl3::Codebook cb : kCodebooks)
    for (int K : {1, 2, 3, 4, 5, 6, 7, 8}) {
      SCOPED_TRACE(absl::StrFormat("%s K%d", exl3::CodebookName(cb), K));
      const auto l = MakeLinear(256, 256, K, cb, false, 50 + K + 10 * static_cast<int>(cb));
      ASSERT_NE(l, nullptr);
      const Exl3DeviceWeight& w = l->view;
      const std::vector<float> x = testing::RandomRows(65, w.k, 3);
      auto xd = Upload(x);
      const size_t bytes = Exl3LinearWorkspaceBytes(w, 65), frag_bytes = w.k * w.n * 2;
      Workspace ws(bytes);
      DeviceBuffer yd(65 * w.n * sizeof(float));
      ASSERT_TRUE(Exl3Linear(ws.context(), xd->as<float>(), w.k, 65, w, yd.as<float>(), w.n).ok());
      std::vector<uint32_t> frag(frag_bytes / 4);
      CUDA_OK(cudaMemcpy(frag.data(), ws.buffer.as<char>() + bytes - frag_bytes, frag_bytes,
                         cudaMemcpyDeviceToHost));
      const std::vector<float> want = exl3::DecodeRotated(l->weight);
      const int64_t kt = w.k / 16;
      int64_t bad = 0;
      for (int64_t hs = 0; hs < w.n / 128 * 2 * kt; ++hs) {
        const int64_t tk = hs % kt, tile0 = hs / kt * 4;  // First of the half-strip's 4 tiles.
        for (int t = 0; t < 4; ++t)
          for (int lane = 0; lane < 32; ++lane)
            for (int i = 0; i < 4; ++i) {
              const uint32_t word = frag[hs * 512 + (t * 32 + lane) * 4 + i];
              const int64_t row = tk * 16 + 2 * (lane % 4) + 8 * (i / 2);
              const int64_t col = (tile0 + t) * 16 + lane / 4 + 8 * (i % 2);
              for (int half = 0; half < 2; ++half) {
                const float got = HalfToFloat(static_cast<uint16_t>(word >> (16 * half)));
                if (got != want[(row + half) * w.n + col] && bad++ < 5)
                  ADD_FAILURE() << "k " << row + half << " n " << col << ": " << got << " vs "
                                << want[(row + half) * w.n + col];
              }
            }
      }
      EXPECT_EQ(bad, 0);
    }
}

TEST(Exl3PromptCuda, EveryRowGetsItsOneRowBitsForEveryCodebookWidthAndPlan) {
  constexpr int64_t kRows = 257;
  double worst = 0;
  int cases = 0;
  for (exl3::Codebook cb : kCodebooks)
    for (int K : {1, 2, 3, 4, 5, 6, 8}) {
      const auto l = MakeLinear(K % 2 ? 512 : 1024, 640, K, cb, K % 3 == 0,
                                100 + K + 10 * static_cast<int>(cb));
      ASSERT_NE(l, nullptr);
      const int64_t k = l->view.k, n = l->view.n;
      const std::vector<float> x = testing::RandomRows(kRows, k, 7 + K);
      auto xd = Upload(x);
      std::vector<float> cpu_y(kRows * n);
      ASSERT_TRUE(cpu::Exl3Linear(x.data(), k, kRows, l->weight, cpu_y.data(), n).ok());
      const exl3::Plan official = l->weight.plan();
      for (auto [sk, wk] :
           std::vector<std::pair<int, int>>{{official.k_splits, official.warps}, {1, 1}, {2, 4}}) {
        Exl3DeviceWeight v = l->view;
        v.k_splits = sk;
        v.warps = wk;
        const std::vector<float> solo = Solo(v, xd->as<float>(), kRows);
        for (int64_t rows : {65, 100, 130, 257}) {
          SCOPED_TRACE(absl::StrFormat("%s K%d plan (%d,%d) rows %d", exl3::CodebookName(cb), K, sk,
                                       wk, rows));
          auto got = RunRows(v, xd->as<float>(), rows);
          ASSERT_TRUE(got.ok()) << got.status();
          EXPECT_EQ(FirstDifferentRow(*got, solo, rows, n), -1);
          if (sk == official.k_splits && wk == official.warps) {
            const double err = RelFro(got->data(), cpu_y.data(), rows * n);
            worst = std::max(worst, err);
            EXPECT_LE(err, 1e-5);
          }
          ++cases;
        }
        // The old path (64-row launches that decode again) agrees too.
        auto old = RunRows(v, xd->as<float>(), 130, 0, {.prompt = -1});
        ASSERT_TRUE(old.ok()) << old.status();
        EXPECT_EQ(FirstDifferentRow(*old, solo, 130, n), -1) << "forced old path";
      }
    }
  EXPECT_EQ(cases, 3 * 7 * 3 * 4);
  std::printf("worst rel_fro against the CPU op: %.3g\n", worst);
}

// Fragments from 1 row on (Context::exl3_prompt = 1): every row group (1, 2, 4, 8 groups of 8
// rows), both schedules, the rotation kernel, two blocks per SM and 4- or 2-tile items multiply
// the same values.
TEST(Exl3PromptCuda, FragmentsGiveTheTrellisBitsAtEveryRowGroupAndSchedule) {
  constexpr int64_t kRows = 64;
  int cases = 0;
  for (exl3::Codebook cb : kCodebooks)
    for (int K : {2, 3, 4, 6}) {
      const auto l = MakeLinear(1024, 512, K, cb, K == 3, 200 + K + 10 * static_cast<int>(cb));
      ASSERT_NE(l, nullptr);
      const std::vector<float> x = testing::RandomRows(kRows, l->view.k, 11 + K);
      auto xd = Upload(x);
      const std::vector<float> solo = Solo(l->view, xd->as<float>(), kRows);
      const size_t ws = Exl3LinearWorkspaceBytes(l->view, 65);  // Room for the fragments.
      for (int64_t rows : {1, 5, 8, 9, 16, 17, 32, 33, 64})
        for (Knobs knobs : {Knobs{1, 0, 0, 0, 0}, Knobs{1, 1, 0, 0, 0}, Knobs{1, 2, 0, 0, 0},
                            Knobs{1, 0, 1, 0, 0}, Knobs{1, 0, 0, 2, 0}, Knobs{1, 0, 0, 0, 4},
                            Knobs{1, 0, 0, 0, 2}}) {
          auto got = RunRows(l->view, xd->as<float>(), rows, ws, knobs);
          if (!got.ok() && got.status().code() == absl::StatusCode::kResourceExhausted)
            continue;  // Rounds above 16 rows or with 2-tile items.
          ASSERT_TRUE(got.ok()) << got.status();
          EXPECT_EQ(FirstDifferentRow(*got, solo, rows, l->view.n), -1)
              << exl3::CodebookName(cb) << " K" << K << " rows " << rows << " schedule "
              << knobs.schedule << " rotation " << knobs.rotation_kernel << " bps "
              << knobs.blocks_per_sm << " item tiles " << knobs.item_tiles;
          ++cases;
        }
    }
  EXPECT_GE(cases, 3 * 4 * 9 * 6);  // Rounds run up to 16 rows only.
}

TEST(Exl3PromptCuda, SlabsOfAnyWidthAndColumnViewsGiveTheSameBits) {
  const auto l = MakeLinear(1024, 7 * 128, 4, exl3::Codebook::kMul1, true, 300);
  ASSERT_NE(l, nullptr);
  const Exl3DeviceWeight& w = l->view;
  constexpr int64_t kRows = 130;
  const std::vector<float> x = testing::RandomRows(kRows, w.k, 301);
  auto xd = Upload(x);
  const std::vector<float> solo = Solo(w, xd->as<float>(), kRows);
  const size_t full = Exl3LinearWorkspaceBytes(w, kRows), block = w.k * 256;
  // Room for 7 (one slab), 3, 2, 1 and 0 blocks' fragments (0: 64-row launches that decode).
  for (int64_t blocks : {7, 3, 2, 1, 0}) {
    auto got = RunRows(w, xd->as<float>(), kRows, full - (7 - blocks) * block);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(FirstDifferentRow(*got, solo, kRows, w.n), -1) << "room for " << blocks << " blocks";
  }
  // A column view on the prompt path: the parent's columns.
  auto view = l->weight.columns(256, 512);
  ASSERT_TRUE(view.ok());
  auto dv = l->device.View(*view);
  ASSERT_TRUE(dv.ok());
  auto got = RunRows(*dv, xd->as<float>(), kRows);
  ASSERT_TRUE(got.ok()) << got.status();
  for (int64_t r = 0; r < kRows; ++r)
    ASSERT_EQ(std::memcmp(got->data() + r * 512, solo.data() + r * w.n + 256, 512 * sizeof(float)),
              0)
        << "view row " << r;
}

// Prompts of two weights queued back to back on one workspace, no sync in between, also with
// slabs: each launch overlaps the previous one's end (programmatic dependent launch), so a decode
// must never overwrite fragments a linear still reads.
TEST(Exl3PromptCuda, BackToBackPromptsOnOneWorkspaceRepeatTheirBits) {
  const auto a = MakeLinear(1024, 10 * 128, 4, exl3::Codebook::kMul1, false, 400);
  const auto b = MakeLinear(2048, 6 * 128, 3, exl3::Codebook::k3Inst, true, 401);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  constexpr int64_t kRows = 257;
  const std::vector<float> x = testing::RandomRows(kRows, 2048, 402);
  auto xd = Upload(x);  // k = 1024 reads the first half of each 2048-float row: stride 2048.
  const std::vector<float> solo_b = Solo(b->view, xd->as<float>(), kRows);
  std::vector<float> solo_a(kRows * a->view.n);
  {
    Workspace ws(Exl3LinearWorkspaceBytes(a->view, 1));
    DeviceBuffer yd(solo_a.size() * sizeof(float));
    for (int64_t r = 0; r < kRows; ++r)
      ASSERT_TRUE(Exl3Linear(ws.context({.prompt = -1}), xd->as<float>() + r * 2048, 2048, 1,
                             a->view, yd.as<float>() + r * a->view.n, a->view.n)
                      .ok());
    CUDA_OK(cudaMemcpy(solo_a.data(), yd.get(), yd.bytes(), cudaMemcpyDeviceToHost));
  }
  const size_t full =
      std::max(Exl3LinearWorkspaceBytes(a->view, kRows), Exl3LinearWorkspaceBytes(b->view, kRows));
  const size_t slabbed = std::max(Exl3LinearWorkspaceBytes(a->view, kRows) - 8 * a->view.k * 256,
                                  Exl3LinearWorkspaceBytes(b->view, 64));  // a: slabs of 2.
  const int64_t rows_of[4] = {100, 257, 65, 130};
  for (size_t ws_bytes : {full, slabbed}) {
    Workspace ws(ws_bytes);
    std::vector<std::unique_ptr<DeviceBuffer>> ys;
    for (int i = 0; i < 4; ++i) {
      const Linear& l = i % 2 ? *b : *a;
      ys.push_back(std::make_unique<DeviceBuffer>(rows_of[i] * l.view.n * sizeof(float)));
      CUDA_OK(cudaMemset(ys.back()->get(), 0xFF, ys.back()->bytes()));
    }
    for (int i = 0; i < 4; ++i) {
      const Linear& l = i % 2 ? *b : *a;
      const absl::Status s = Exl3Linear(ws.context(), xd->as<float>(), 2048, rows_of[i], l.view,
                                        ys[i]->as<float>(), l.view.n);
      ASSERT_TRUE(s.ok()) << s;
    }
    for (int i = 0; i < 4; ++i) {
      const Linear& l = i % 2 ? *b : *a;
      std::vector<float> got(rows_of[i] * l.view.n);
      CUDA_OK(cudaMemcpy(got.data(), ys[i]->get(), ys[i]->bytes(), cudaMemcpyDeviceToHost));
      EXPECT_EQ(FirstDifferentRow(got, i % 2 ? solo_b : solo_a, rows_of[i], l.view.n), -1)
          << "launch " << i << " workspace " << ws_bytes;
    }
  }
}

// The span head keeps 64-row launches; at prompt rows its packed logits are still the full head's
// columns, which the full head now computes from fragments.
TEST(Exl3PromptCuda, SpanHeadAtPromptRowsPacksTheFullHeadsColumns) {
  const auto h = MakeLinear(1024, 70 * 128, 6, exl3::Codebook::kMul1, false, 500);
  ASSERT_NE(h, nullptr);
  auto views =
      exl3::MakeSpanViews(h->weight, std::vector<exl3::ColumnSpan>{{0, 3000}, {8900, 8960}});
  ASSERT_TRUE(views.ok()) << views.status();
  std::vector<Exl3DeviceSpan> dev;
  for (const exl3::SpanView& v : *views) {
    auto d = h->device.Span(v);
    ASSERT_TRUE(d.ok()) << d.status();
    dev.push_back(*d);
  }
  constexpr int64_t kRows = 100;
  const std::vector<float> x = testing::RandomRows(kRows, h->view.k, 501);
  auto xd = Upload(x);
  auto full = RunRows(h->view, xd->as<float>(), kRows);
  ASSERT_TRUE(full.ok()) << full.status();
  const int64_t packed_size = exl3::PackedSize(*views);
  Workspace ws(Exl3SpanLinearWorkspaceBytes(dev.data(), 2, kRows));
  DeviceBuffer pd(kRows * packed_size * sizeof(float));
  CUDA_OK(cudaMemset(pd.get(), 0xFF, pd.bytes()));
  ASSERT_TRUE(Exl3SpanLinear(ws.context(), xd->as<float>(), h->view.k, kRows, dev.data(), 2,
                             pd.as<float>(), packed_size)
                  .ok());
  std::vector<float> packed(kRows * packed_size);
  CUDA_OK(cudaMemcpy(packed.data(), pd.get(), pd.bytes(), cudaMemcpyDeviceToHost));
  for (int64_t r = 0; r < kRows; ++r) {
    int64_t col = 0;
    for (const exl3::SpanView& v : *views) {
      ASSERT_EQ(std::memcmp(packed.data() + r * packed_size + col,
                            full->data() + r * h->view.n + v.span.begin, v.size() * sizeof(float)),
                0)
          << "row " << r << " span from " << v.span.begin;
      col += v.size();
    }
  }
}

TEST(Exl3PromptCuda, SizesTheFragmentsAndRejectsSmallWorkspacesAndBadArguments) {
  const auto l = MakeLinear(512, 3 * 128, 4, exl3::Codebook::kMcg, false, 600);
  ASSERT_NE(l, nullptr);
  const Exl3DeviceWeight& w = l->view;
  constexpr int64_t kRows = 100;
  const std::vector<float> x = testing::RandomRows(kRows, w.k, 601);
  auto xd = Upload(x);
  const size_t at64 = Exl3LinearWorkspaceBytes(w, 64), at100 = Exl3LinearWorkspaceBytes(w, kRows);
  EXPECT_GE(at100, at64 + static_cast<size_t>(w.k * w.n * 2));  // The whole weight's fragments.
  EXPECT_EQ(Exl3LinearWorkspaceBytes(w, 1000), at100);  // Sized per 64-row launch, not per row.
  // Below what a 64-row launch needs: ResourceExhausted, null workspace included.
  EXPECT_EQ(RunRows(w, xd->as<float>(), kRows, at64 - 1).status().code(),
            absl::StatusCode::kResourceExhausted);
  {
    DeviceBuffer yd(kRows * w.n * sizeof(float));
    Context none;
    EXPECT_EQ(Exl3Linear(none, xd->as<float>(), w.k, kRows, w, yd.as<float>(), w.n).code(),
              absl::StatusCode::kResourceExhausted);
    Workspace ws(at100);
    EXPECT_EQ(
        Exl3Linear(ws.context(), xd->as<float>() + 1, w.k, kRows, w, yd.as<float>(), w.n).code(),
        absl::StatusCode::kInvalidArgument);  // x not 16-byte aligned.
    EXPECT_EQ(
        Exl3Linear(ws.context(), xd->as<float>(), w.k, kRows, w, yd.as<float>() + 2, w.n).code(),
        absl::StatusCode::kInvalidArgument);  // y not 16-byte aligned.
    EXPECT_EQ(
        Exl3Linear(ws.context(), xd->as<float>(), w.k - 4, kRows, w, yd.as<float>(), w.n).code(),
        absl::StatusCode::kInvalidArgument);  // x_stride below k.
    Exl3DeviceWeight bad = w;
    bad.k_splits = 3;
    EXPECT_EQ(
        Exl3Linear(ws.context(), xd->as<float>(), w.k, kRows, bad, yd.as<float>(), w.n).code(),
        absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(Exl3LinearWorkspaceBytes(bad, kRows), 0u);
    CUDA_OK(cudaDeviceSynchronize());
  }
  // Exactly a 64-row launch's workspace: the old path, same bits.
  const std::vector<float> solo = Solo(w, xd->as<float>(), kRows);
  auto got = RunRows(w, xd->as<float>(), kRows, at64);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(FirstDifferentRow(*got, solo, kRows, w.n), -1);
  CUDA_OK(cudaGetLastError());
}

}  // namespace
}  // namespace twinspan::cuda
