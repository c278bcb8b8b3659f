// GPU tests of kernels/cuda/exl3_linear and exl3_span_linear: exllamav3's golden outputs, an
// independent dense reference built from the golden codebook tables on random trellis (never
// zeros), the CPU op on every codebook, width and row count, row invariance bit for bit for 1..100
// rows, the prompt path bit-equal to the decode kernel (every plan, chunked or whole), column
// views and the packed span head bit-equal to the parent's columns, and argument errors. Needs a
// GPU: run through scripts/gpu-check.sh, not ctest.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/exl3/plan.h"
#include "common/exl3/span_view.h"
#include "common/exl3/weight.h"
#include "common/safetensors/half.h"
#include "common/safetensors/safetensors_file.h"
#include "gtest/gtest.h"
#include "kernels/cpu/exl3_linear.h"
#include "kernels/cpu/exl3_span_linear.h"
#include "kernels/cuda/exl3_layout.h"
#include "kernels/cuda/exl3_linear.cuh"
#include "kernels/cuda/exl3_span_linear.cuh"
#include "kernels/cuda/exl3_weight.h"
#include "tests/testing/golden.h"
#include "tests/unit/formats_exl3_fixture.h"

namespace twinspan::cuda {
namespace {

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << cudaGetErrorString(expr)

// Owns one device allocation.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (cudaMalloc(&ptr_, bytes) != cudaSuccess) ptr_ = nullptr;
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

template <typename T>
std::unique_ptr<DeviceBuffer> Upload(const std::vector<T>& host) {
  auto buf = std::make_unique<DeviceBuffer>(host.size() * sizeof(T));
  cudaMemcpy(buf->get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  return buf;
}

// A weight on the device with the buffers it points into.
struct HostWeight {
  int64_t k = 0, n = 0;
  int bits = 0;
  Exl3Codebook cb = Exl3Codebook::kMul1;
  std::vector<uint16_t> trellis;  // [k/16][n/16][16*bits]
  std::vector<uint16_t> suh, svh;
};

struct DeviceWeight {
  std::unique_ptr<DeviceBuffer> trellis, suh, svh;
  Exl3DeviceWeight view;
};

DeviceWeight ToDevice(const HostWeight& h, int k_splits, int warps) {
  DeviceWeight d;
  std::vector<uint32_t> layout(h.k * h.n * h.bits / 32);
  ToExl3DeviceLayout(h.trellis.data(), h.n / 16, h.k, h.n, h.bits, layout.data());
  d.trellis = Upload(layout);
  d.suh = Upload(h.suh);
  d.svh = Upload(h.svh);
  d.view.trellis = d.trellis->as<uint32_t>();
  d.view.suh = d.suh->as<__half>();
  d.view.svh = d.svh->as<__half>();
  d.view.k = h.k;
  d.view.n = h.n;
  d.view.bits = h.bits;
  d.view.codebook = h.cb;
  d.view.k_splits = k_splits;
  d.view.warps = warps;
  return d;
}

// Runs the op on the device for `rows` rows of x (row-major, k floats a row); returns y.
// schedule: Context::exl3_schedule (0 automatic, 1 warp units, 2 rounds) plus 10 for the
// rotation kernel above 16 rows, plus 100 for two blocks per SM, plus 1000 * w for blocks of at
// most 5 * w warps, plus 10000 * t for work items of t tiles.
class Runner {
 public:
  Runner() : workspace_(64 << 20) { cudaMemset(workspace_.get(), 0, workspace_.bytes()); }
  Context context(int schedule = 0) const {
    Context ctx;
    ctx.workspace = workspace_.get();
    ctx.workspace_bytes = workspace_.bytes();
    ctx.exl3_schedule = schedule % 10;
    ctx.exl3_rotation_kernel = schedule / 10 % 10;
    ctx.exl3_blocks_per_sm = schedule / 100 % 10 == 1 ? 2 : 0;
    ctx.exl3_warps = schedule / 1000 % 10 * 5;
    ctx.exl3_item_tiles = schedule / 10000;
    return ctx;
  }
  absl::Status Run(const Exl3DeviceWeight& w, const float* x_dev, int64_t rows, float* y_dev,
                   int schedule = 0) {
    return Exl3Linear(context(schedule), x_dev, w.k, rows, w, y_dev, w.n);
  }

 private:
  DeviceBuffer workspace_;
};

// The op's output for a forced schedule, or its status when the schedule cannot run this shape
// (ResourceExhausted: e.g. rounds of 8 warps in a half-SM block of 4).
absl::StatusOr<std::vector<float>> RunScheduled(const Exl3DeviceWeight& w,
                                                const std::vector<float>& x, int64_t rows,
                                                int schedule) {
  auto xd = Upload(x);
  DeviceBuffer yd(rows * w.n * sizeof(float));
  cudaMemset(yd.get(), 0xFF, yd.bytes());
  Runner runner;
  const absl::Status s = runner.Run(w, xd->as<float>(), rows, yd.as<float>(), schedule);
  if (!s.ok()) return s;
  std::vector<float> y(rows * w.n);
  if (cudaMemcpy(y.data(), yd.get(), yd.bytes(), cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaDeviceSynchronize() != cudaSuccess)
    return absl::InternalError(cudaGetErrorString(cudaGetLastError()));
  return y;
}

std::vector<float> RunOnce(const Exl3DeviceWeight& w, const std::vector<float>& x, int64_t rows,
                           int schedule = 0) {
  auto xd = Upload(x);
  DeviceBuffer yd(rows * w.n * sizeof(float));
  // Poison y so an unwritten element shows as NaN.
  cudaMemset(yd.get(), 0xFF, yd.bytes());
  Runner runner;
  const absl::Status s = runner.Run(w, xd->as<float>(), rows, yd.as<float>(), schedule);
  EXPECT_TRUE(s.ok()) << s;
  std::vector<float> y(rows * w.n);
  EXPECT_EQ(cudaMemcpy(y.data(), yd.get(), yd.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return y;
}

double RelFro(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
    if (!std::isfinite(got[i])) return INFINITY;
  }
  return std::sqrt(num / den);
}

// ---- an independent reference from the golden codebook tables --------------------------------

struct Tables {
  std::vector<uint16_t> lut[3];  // fp16 bits of each state, per codebook.
  std::vector<int> perm;         // perm[p] = r*16 + c of trellis position p.
};

const Tables& GoldenTables() {
  static const Tables* tables = [] {
    auto* t = new Tables;
    auto file =
        SafetensorsFile::Open(testing::GoldenPath("exl3_linear/exl3_codebook_lut.safetensors"));
    if (!file.ok()) return t;
    const char* names[3] = {"lut_3inst", "lut_mcg", "lut_mul1"};
    for (int c = 0; c < 3; ++c) {
      const TensorView* v = (*file)->Find(names[c]);
      if (!v) continue;
      t->lut[c].resize(v->numel());
      std::memcpy(t->lut[c].data(), v->data, v->nbytes);
    }
    if (const TensorView* v = (*file)->Find("tensor_core_perm")) {
      std::vector<int32_t> p(v->numel());
      std::memcpy(p.data(), v->data, v->nbytes);
      t->perm.assign(p.begin(), p.end());
    }
    return t;
  }();
  return *tables;
}

// W_hat[k][n] from the trellis, by the bit arithmetic of exl3-format.md 2.2 and the golden tables.
std::vector<float> DecodeReference(const HostWeight& h) {
  const Tables& t = GoldenTables();
  const auto& lut = t.lut[static_cast<int>(h.cb)];
  std::vector<float> w(h.k * h.n);
  const int K = h.bits, nw = 8 * K;
  for (int64_t tk = 0; tk < h.k / 16; ++tk)
    for (int64_t tn = 0; tn < h.n / 16; ++tn) {
      const uint16_t* tile = h.trellis.data() + (tk * (h.n / 16) + tn) * 16 * K;
      auto word = [&](int j) {
        return uint32_t{tile[ptrdiff_t{2} * j]} | uint32_t{tile[ptrdiff_t{2} * j + 1]} << 16;
      };
      for (int p = 0; p < 256; ++p) {
        const int b0 = (p + 1) * K - 16 + 256 * K, b1 = b0 + 16;
        const int i0 = b0 / 32, i1 = (b1 - 1) / 32, s = (i1 + 1) * 32 - b1;
        const uint64_t pair = uint64_t{word(i0 % nw)} << 32 | word(i1 % nw);
        const uint32_t state = static_cast<uint32_t>(pair >> s) & 0xFFFF;
        const int r = t.perm[p] / 16, c = t.perm[p] % 16;
        w[(tk * 16 + r) * h.n + tn * 16 + c] = HalfToFloat(lut[state]);
      }
    }
  return w;
}

void Hadamard128InPlace(double* v) {
  for (int h = 1; h < 128; h <<= 1)
    for (int i = 0; i < 128; ++i)
      if (!(i & h)) {
        const double a = v[i], b = v[i + h];
        v[i] = a + b;
        v[i + h] = a - b;
      }
  for (int i = 0; i < 128; ++i) v[i] /= std::sqrt(128.0);
}

// y = H(fp16(H(x * suh)) @ W_hat) * svh in double.
std::vector<float> DenseReference(const HostWeight& h, const std::vector<float>& x, int64_t rows) {
  const std::vector<float> w = DecodeReference(h);
  std::vector<float> y(rows * h.n);
  std::vector<double> xh(h.k), acc(h.n);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < h.k; ++i)
      xh[i] = static_cast<double>(x[r * h.k + i] * HalfToFloat(h.suh[i]));
    for (int64_t c = 0; c < h.k; c += 128) Hadamard128InPlace(xh.data() + c);
    for (int64_t i = 0; i < h.k; ++i) xh[i] = HalfToFloat(FloatToHalf(static_cast<float>(xh[i])));
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t i = 0; i < h.k; ++i)
      for (int64_t j = 0; j < h.n; ++j) acc[j] += xh[i] * w[i * h.n + j];
    for (int64_t c = 0; c < h.n; c += 128) Hadamard128InPlace(acc.data() + c);
    for (int64_t j = 0; j < h.n; ++j)
      y[r * h.n + j] = static_cast<float>(acc[j] * HalfToFloat(h.svh[j]));
  }
  return y;
}

HostWeight RandomWeight(int64_t k, int64_t n, int bits, Exl3Codebook cb, uint32_t seed) {
  std::mt19937 rng(seed);
  HostWeight h;
  h.k = k;
  h.n = n;
  h.bits = bits;
  h.cb = cb;
  h.trellis.resize(k / 16 * (n / 16) * 16 * bits);
  for (auto& v : h.trellis) v = static_cast<uint16_t>(rng());  // Any bit string is a valid trellis.
  std::uniform_real_distribution<float> scale(0.02f, 0.1f);
  auto sign_scale = [&] { return FloatToHalf((rng() & 1 ? 1.f : -1.f) * scale(rng)); };
  for (int64_t i = 0; i < k; ++i) h.suh.push_back(sign_scale());
  for (int64_t i = 0; i < n; ++i) h.svh.push_back(sign_scale());
  return h;
}

std::vector<float> RandomRows(int64_t rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> x(rows * k);
  for (auto& v : x) v = d(rng);
  return x;
}

const char* CbName(Exl3Codebook cb) {
  return cb == Exl3Codebook::k3inst ? "3inst" : (cb == Exl3Codebook::kMcg ? "mcg" : "mul1");
}

// exl3 plan(k, n) first, then other plans the kernel must handle as well.
std::vector<std::pair<int, int>> PlansFor(int64_t k, int64_t n) {
  const exl3::Plan official = exl3::plan(k, n);
  std::vector<std::pair<int, int>> out = {{official.k_splits, official.warps}};
  const int64_t kt = k / 16;
  for (auto [sk, wk] :
       std::vector<std::pair<int, int>>{{1, 8}, {1, 4}, {2, 4}, {4, 2}, {1, 1}, {8, 1}})
    if (kt % (int64_t{sk} * wk) == 0 && std::pair{sk, wk} != out[0]) out.push_back({sk, wk});
  return out;
}

// ---- golden ---------------------------------------------------------------------------------

TEST(Exl3LinearCuda, MatchesExllamav3GoldenReference) {
  const Exl3Codebook cbs[3] = {Exl3Codebook::k3inst, Exl3Codebook::kMcg, Exl3Codebook::kMul1};
  int cases = 0;
  for (const char* shape : {"256x384", "512x256", "1024x512"}) {
    const std::string path =
        testing::GoldenPath(absl::StrFormat("exl3_linear/exl3_linear_%s.safetensors", shape));
    auto file = SafetensorsFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    const TensorView* xv = (*file)->Find("x");
    ASSERT_NE(xv, nullptr);
    const int64_t rows = xv->shape[0];
    auto xf = ToFloat(*xv);
    ASSERT_TRUE(xf.ok());
    for (Exl3Codebook cb : cbs)
      for (int K : {1, 2, 3, 4, 5, 6, 8}) {
        const std::string key = absl::StrFormat("%s.K%d.", CbName(cb), K);
        const TensorView* tv = (*file)->Find(key + "trellis");
        if (!tv) continue;
        HostWeight h;
        h.k = tv->shape[0] * 16;
        h.n = tv->shape[1] * 16;
        h.bits = static_cast<int>(tv->shape[2] / 16);
        h.cb = cb;
        ASSERT_EQ(h.bits, K);
        h.trellis.resize(tv->numel());
        std::memcpy(h.trellis.data(), tv->data, tv->nbytes);
        for (auto [name, dst] : {std::pair{"suh", &h.suh}, std::pair{"svh", &h.svh}}) {
          const TensorView* v = (*file)->Find(key + name);
          ASSERT_NE(v, nullptr) << key << name;
          dst->resize(v->numel());
          std::memcpy(dst->data(), v->data, v->nbytes);
        }
        auto yref = ToFloat(*(*file)->Find(key + "y_ref_fp32"));
        ASSERT_TRUE(yref.ok());
        for (auto [sk, wk] : PlansFor(h.k, h.n)) {
          DeviceWeight d = ToDevice(h, sk, wk);
          const std::vector<float> y = RunOnce(d.view, *xf, rows);
          const double err = RelFro(y, *yref);
          EXPECT_LE(err, 2e-3) << shape << " " << key << " plan (" << sk << "," << wk << ")";
          ++cases;
        }
      }
  }
  EXPECT_GE(cases, 3 * 21);
}

// ---- random trellis against the dense reference ---------------------------------------------

TEST(Exl3LinearCuda, MatchesDenseReferenceOnRandomTrellisAllCodebooksAndWidths) {
  for (Exl3Codebook cb : {Exl3Codebook::k3inst, Exl3Codebook::kMcg, Exl3Codebook::kMul1})
    for (int K = 1; K <= 8; ++K) {
      const HostWeight h = RandomWeight(512, 384, K, cb, 100 + K * 7 + static_cast<int>(cb));
      const std::vector<float> x = RandomRows(5, h.k, 7 + K);
      const std::vector<float> want = DenseReference(h, x, 5);
      for (auto [sk, wk] : PlansFor(h.k, h.n)) {
        DeviceWeight d = ToDevice(h, sk, wk);
        const double err = RelFro(RunOnce(d.view, x, 5), want);
        EXPECT_LE(err, 1e-4) << CbName(cb) << " K" << K << " plan (" << sk << "," << wk << ")";
      }
    }
}

// ---- row invariance -------------------------------------------------------------------------

TEST(Exl3LinearCuda, EveryRowCountGivesEachRowItsOneRowBits) {
  constexpr int64_t kRows = 100;  // 1..64 in one launch, then 64-row launches.
  for (Exl3Codebook cb : {Exl3Codebook::k3inst, Exl3Codebook::kMcg, Exl3Codebook::kMul1})
    for (int K = 1; K <= 8; ++K) {
      const HostWeight h = RandomWeight(1024, 256, K, cb, 900 + K);
      DeviceWeight d = ToDevice(h, 2, 4);
      const std::vector<float> x = RandomRows(kRows, h.k, 300 + K);
      auto xd = Upload(x);
      DeviceBuffer yd(kRows * h.n * sizeof(float));
      Runner runner;
      std::vector<float> single(kRows * h.n), multi(kRows * h.n);
      for (int64_t r = 0; r < kRows; ++r)
        ASSERT_TRUE(
            runner.Run(d.view, xd->as<float>() + r * h.k, 1, yd.as<float>() + r * h.n).ok());
      CUDA_OK(cudaMemcpy(single.data(), yd.get(), yd.bytes(), cudaMemcpyDeviceToHost));
      for (float v : single) ASSERT_TRUE(std::isfinite(v));
      for (int64_t m = 1; m <= kRows; m = m < 64 ? m + 1 : m + 36) {
        CUDA_OK(cudaMemset(yd.get(), 0xFF, yd.bytes()));
        ASSERT_TRUE(runner.Run(d.view, xd->as<float>(), m, yd.as<float>()).ok());
        CUDA_OK(
            cudaMemcpy(multi.data(), yd.get(), m * h.n * sizeof(float), cudaMemcpyDeviceToHost));
        ASSERT_EQ(std::memcmp(multi.data(), single.data(), m * h.n * sizeof(float)), 0)
            << CbName(cb) << " K" << K << " rows " << m;
      }
    }
}

// ---- the prompt path -------------------------------------------------------------------------

// y for `rows` rows with Context::exl3_prompt_rows = prompt_rows (-1: 64-row launches only),
// exl3_schedule = schedule (on the prompt path 1: a plan group a work unit, 2: the whole of k) and
// exl3_prompt_tile = tile (0 automatic, 64 or 256 rows a block).
std::vector<float> RunPromptRows(const Exl3DeviceWeight& w, const std::vector<float>& x,
                                 int64_t rows, int prompt_rows, int schedule = 0, int tile = 0) {
  auto xd = Upload(x);
  DeviceBuffer yd(rows * w.n * sizeof(float));
  cudaMemset(yd.get(), 0xFF, yd.bytes());  // Poison: an unwritten element shows as NaN.
  Runner runner;
  Context ctx = runner.context(schedule);
  ctx.exl3_prompt_rows = prompt_rows;
  ctx.exl3_prompt_tile = tile;
  const absl::Status s = Exl3Linear(ctx, xd->as<float>(), w.k, rows, w, yd.as<float>(), w.n);
  EXPECT_TRUE(s.ok()) << s;
  std::vector<float> y(rows * w.n);
  EXPECT_EQ(cudaMemcpy(y.data(), yd.get(), yd.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return y;
}

// Every codebook and K (every plan at mul1 and K 4, the 27B's (8, 4) among them) of a 1024 x 640
// weight on the prompt path with `tile`-row blocks (0: picked) at each of `row_counts`, whether a
// tile's k is cut automatically, into plan groups (schedule 1, where they are whole stages of
// `stage_ktiles`) or not at all (2), bit-equal to 64-row launches; *cases counts the comparisons.
// Weights and rows are drawn from `seed` and `x_seed`.
void ExpectPromptTilesGiveDecodeKernelBits(int tile, int stage_ktiles,
                                           std::initializer_list<int64_t> row_counts, uint32_t seed,
                                           uint32_t x_seed, int* cases) {
  for (Exl3Codebook cb : {Exl3Codebook::k3inst, Exl3Codebook::kMcg, Exl3Codebook::kMul1})
    for (int K : {1, 2, 3, 4, 5, 6, 7, 8}) {
      const HostWeight h = RandomWeight(1024, 640, K, cb, seed + 10 * K + static_cast<int>(cb));
      std::vector<std::pair<int, int>> plans = PlansFor(h.k, h.n);
      plans.push_back({8, 4});  // The 27B's down_proj and o_proj plan: both folds.
      for (size_t pi = 0; pi < plans.size(); ++pi) {
        if (cb != Exl3Codebook::kMul1 && K != 4 && pi > 0) continue;  // Every plan at mul1 and K 4.
        DeviceWeight d = ToDevice(h, plans[pi].first, plans[pi].second);
        for (const int64_t rows : row_counts) {
          const std::vector<float> x = RandomRows(rows, h.k, x_seed + rows + K);
          const std::vector<float> want = RunPromptRows(d.view, x, rows, -1);
          for (const int schedule : {0, 1, 2}) {
            const int G = plans[pi].first * plans[pi].second;
            if (schedule == 1 && h.k / 16 / G % stage_ktiles != 0) continue;  // Not whole stages.
            const std::vector<float> got = RunPromptRows(d.view, x, rows, 17, schedule, tile);
            for (float v : got) ASSERT_TRUE(std::isfinite(v));
            ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
                << CbName(cb) << " K" << K << " plan (" << plans[pi].first << ","
                << plans[pi].second << ") rows " << rows << " schedule " << schedule;
            ++*cases;
          }
        }
      }
    }
}

TEST(Exl3LinearCuda, PromptPathGivesEveryRowItsDecodeKernelBitsForEveryPlan) {
  // The prompt kernel runs each plan group's mma chain and the rounds fold of the decode kernel,
  // so each row must come out as from 64-row launches (themselves each row's one-row bits);
  // 5 column blocks leave the last column tile half empty, and 17, 40 and 130 rows leave row
  // tiles partly empty.
  int cases = 0;
  ExpectPromptTilesGiveDecodeKernelBits(64, 8, {17, 40, 130}, 5100, 600, &cases);
  EXPECT_GE(cases, 3 * 8 * 3 * 2);  // At least every codebook and K, automatic and whole k.
}

TEST(Exl3LinearCuda, WgmmaPromptTilesGiveEveryRowItsDecodeKernelBitsForEveryPlan) {
  // 256-row tiles decode each weight tile once for all their rows and multiply it with them in one
  // wgmma: the same A fragments and chains, so the same bits as 64-row launches; 17 rows leave
  // most of a tile empty, 300 and 600 a last tile partly empty. sm_90 GPUs only (sm_90a code).
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  if (major != 9 || minor != 0) GTEST_SKIP() << "wgmma tiles need an sm_90 GPU";
  int cases = 0;
  ExpectPromptTilesGiveDecodeKernelBits(256, 4, {17, 300, 600}, 5300, 700, &cases);
  EXPECT_GE(cases, 3 * 8 * 3 * 2);
}

TEST(Exl3LinearCuda, PromptTileOutsideTheTwoSizesIsRefused) {
  const HostWeight h = RandomWeight(1024, 256, 4, Exl3Codebook::kMul1, 11);
  DeviceWeight d = ToDevice(h, 2, 4);
  constexpr int64_t kRows = 200;
  const Exl3LinearOutput out{&d.view, nullptr, h.n};
  DeviceBuffer ws(Exl3LinearsWorkspaceBytes(&out, 1, kRows)), xd(kRows * h.k * sizeof(float)),
      yd(kRows * h.n * sizeof(float));
  CUDA_OK(cudaMemset(ws.get(), 0, ws.bytes()));
  Context ctx{nullptr, ws.get(), ws.bytes()};
  ctx.exl3_prompt_tile = 128;
  const absl::Status s = Exl3Linear(ctx, xd.as<float>(), h.k, kRows, d.view, yd.as<float>(), h.n);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("exl3_prompt_tile"), std::string_view::npos) << s;
}

TEST(Exl3LinearCuda, PromptInChunksEqualsThePromptWholeAndEachRowAlone) {
  // Chunked prefill: rows [0, 300) at once (one prompt launch), as 65 + 100 + 135 rows (64-row
  // launches, then prompt launches of other sizes) and row by row must agree bit for bit.
  const HostWeight h = RandomWeight(2048, 384, 4, Exl3Codebook::kMul1, 812);
  DeviceWeight d = ToDevice(h, 8, 2);
  constexpr int64_t kRows = 300;
  const std::vector<float> x = RandomRows(kRows, h.k, 813);
  auto xd = Upload(x);
  Runner runner;
  std::vector<float> whole = RunOnce(d.view, x, kRows), parts(kRows * h.n), alone(kRows * h.n);
  DeviceBuffer yd(kRows * h.n * sizeof(float));
  CUDA_OK(cudaMemset(yd.get(), 0xFF, yd.bytes()));
  for (int64_t r0 = 0, i = 0; r0 < kRows; r0 += 65 + 35 * i, ++i)
    ASSERT_TRUE(runner
                    .Run(d.view, xd->as<float>() + r0 * h.k,
                         std::min<int64_t>(65 + 35 * i, kRows - r0), yd.as<float>() + r0 * h.n)
                    .ok());
  CUDA_OK(cudaMemcpy(parts.data(), yd.get(), yd.bytes(), cudaMemcpyDeviceToHost));
  for (int64_t r = 0; r < kRows; ++r)
    ASSERT_TRUE(runner.Run(d.view, xd->as<float>() + r * h.k, 1, yd.as<float>() + r * h.n).ok());
  CUDA_OK(cudaMemcpy(alone.data(), yd.get(), yd.bytes(), cudaMemcpyDeviceToHost));
  for (float v : whole) ASSERT_TRUE(std::isfinite(v));
  EXPECT_EQ(std::memcmp(whole.data(), parts.data(), whole.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(whole.data(), alone.data(), whole.size() * sizeof(float)), 0);
}

TEST(Exl3LinearCuda, PromptPathRefusesASmallWorkspace) {
  const HostWeight h = RandomWeight(1024, 256, 4, Exl3Codebook::kMul1, 9);
  DeviceWeight d = ToDevice(h, 2, 4);
  const Exl3LinearOutput out{&d.view, nullptr, h.n};
  constexpr int64_t kRows = 200;
  const size_t need = Exl3LinearsWorkspaceBytes(&out, 1, kRows);
  EXPECT_GT(need, Exl3LinearsWorkspaceBytes(&out, 1, 64));
  DeviceBuffer ws(need), xd(kRows * h.k * sizeof(float)), yd(kRows * h.n * sizeof(float));
  CUDA_OK(cudaMemset(ws.get(), 0, ws.bytes()));
  Context ctx{nullptr, ws.get(), need - 1};
  const absl::Status s = Exl3Linear(ctx, xd.as<float>(), h.k, kRows, d.view, yd.as<float>(), h.n);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("prompt path"), std::string_view::npos) << s;
  ctx.workspace_bytes = need;
  EXPECT_TRUE(Exl3Linear(ctx, xd.as<float>(), h.k, kRows, d.view, yd.as<float>(), h.n).ok());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// ---- column views ---------------------------------------------------------------------------

TEST(Exl3LinearCuda, ColumnViewsWithTheParentPlanGiveTheParentColumnsBitForBit) {
  // A head-like weight: 70 blocks of 128 columns, planned as the whole (one split, eight warps).
  const HostWeight h = RandomWeight(512, int64_t{70} * 128, 6, Exl3Codebook::kMul1, 77);
  DeviceWeight d = ToDevice(h, 1, 8);
  for (int64_t rows : {1, 16, 64, 100}) {  // 100: the prompt path.
    const std::vector<float> x = RandomRows(rows, h.k, 55 + rows);
    const std::vector<float> full = RunOnce(d.view, x, rows);
    for (auto [first, blocks] :
         std::vector<std::pair<int, int>>{{0, 20}, {64, 6}, {3, 1}, {69, 1}}) {
      Exl3DeviceWeight v = d.view;
      v.trellis += first * Exl3BlockWords(h.k, h.bits);
      v.svh += int64_t{first} * 128;
      v.n = int64_t{blocks} * 128;
      const std::vector<float> part = RunOnce(v, x, rows);
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(std::memcmp(part.data() + r * v.n, full.data() + r * h.n + int64_t{first} * 128,
                              v.n * sizeof(float)),
                  0)
            << "rows " << rows << " view [" << first << ", +" << blocks << ") row " << r;
    }
  }
}

// ---- the two schedules ----------------------------------------------------------------------

TEST(Exl3LinearCuda, EverySchedulePicksTheSameBitsForEveryRowGroup) {
  // Warp units and rounds (up to 16 rows) sum in the plan's order, 4-tile and 2-tile items (up to
  // 16 rows, and from 9) decode the same tiles, B fragments from shared memory or from the rotation
  // kernel are the same values, one or two blocks per SM split the same items: which one a launch
  // picks must not change a bit.
  int cases = 0;
  for (auto [sk, wk] : std::vector<std::pair<int, int>>{{1, 8}, {2, 4}, {4, 2}, {8, 1}})
    for (int K : {3, 4, 6}) {
      const Exl3Codebook cb = K == 3 ? Exl3Codebook::k3inst : Exl3Codebook::kMul1;
      const HostWeight h = RandomWeight(1024, 640, K, cb, 4000 + 10 * K + sk);
      DeviceWeight d = ToDevice(h, sk, wk);
      for (int64_t rows : {1, 9, 17, 40, 64}) {
        const std::vector<float> x = RandomRows(rows, h.k, 70 + rows + K);
        const std::vector<float> units = RunOnce(d.view, x, rows, 1);
        for (float v : units) ASSERT_TRUE(std::isfinite(v));
        // Rounds, automatic, the rotation kernel, two blocks per SM, blocks of 10 or 5 warps,
        // 4-tile units and rounds, 2-tile units.
        for (int schedule : {2, 0, 11, 12, 101, 102, 112, 2000, 1001, 40001, 40002, 20001}) {
          auto other = RunScheduled(d.view, x, rows, schedule);
          if (!other.ok() && other.status().code() == absl::StatusCode::kResourceExhausted)
            continue;  // Rounds above 16 rows, or a schedule that cannot hold the plan's warps.
          ASSERT_TRUE(other.ok()) << other.status();
          ASSERT_EQ(std::memcmp(units.data(), other->data(), units.size() * sizeof(float)), 0)
              << "plan (" << sk << "," << wk << ") K" << K << " rows " << rows << " schedule "
              << schedule;
          ++cases;
        }
      }
    }
  // 1 row: all 12 (2-tile units fall back to 4); 9 rows: at least units (0, 11, 101, 2000, 1001,
  // 40001, 20001) and 4-tile rounds; 17..64 rows: units (0, 11, 101, 2000, 1001, 40001, 20001).
  EXPECT_GE(cases, 4 * 3 * (12 + 8 + 3 * 7));
}

TEST(Exl3LinearCuda, BackToBackLaunchesOnOneWorkspaceRepeatTheirBits) {
  // Launches overlap their prologues (programmatic dependent launch) and from 9 rows on every
  // block waits on the counters (owners' folds); queued without a sync in between, on one
  // workspace, each must still give the bits of a lone launch and leave the counters at zero.
  const HostWeight h = RandomWeight(2048, 1280, 4, Exl3Codebook::kMul1, 31);
  const exl3::Plan plan = exl3::plan(h.k, h.n);
  DeviceWeight d = ToDevice(h, plan.k_splits, plan.warps);
  constexpr int64_t kMaxRows = 64;
  const std::vector<float> x = RandomRows(kMaxRows, h.k, 32);
  const std::vector<float> want = RunOnce(d.view, x, kMaxRows);  // Row r's bits at every count.
  auto xd = Upload(x);
  constexpr int kRepeats = 12;
  constexpr int64_t kRows[] = {16, 1, 64, 40};  // Every row-group kernel, in turn.
  DeviceBuffer yd(int64_t{kRepeats} * kMaxRows * h.n * sizeof(float));
  CUDA_OK(cudaMemset(yd.get(), 0xFF, yd.bytes()));
  Runner runner;
  for (int i = 0; i < kRepeats; ++i)
    ASSERT_TRUE(runner
                    .Run(d.view, xd->as<float>(), kRows[i % 4],
                         yd.as<float>() + static_cast<int64_t>(i) * kMaxRows * h.n)
                    .ok());
  std::vector<float> got(int64_t{kRepeats} * kMaxRows * h.n);
  CUDA_OK(cudaMemcpy(got.data(), yd.get(), yd.bytes(), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kRepeats; ++i)
    ASSERT_EQ(std::memcmp(got.data() + static_cast<int64_t>(i) * kMaxRows * h.n, want.data(),
                          kRows[i % 4] * h.n * sizeof(float)),
              0)
        << "launch " << i << ", " << kRows[i % 4] << " rows";
}

TEST(Exl3LinearCuda, LaunchesOfDifferentWidthsShareOneWorkspace) {
  // A narrow linear's partials must never land on a wider one's counters (the forward alternates
  // 40-block and 136-block linears; the 27B head has 1940 blocks).
  const HostWeight narrow = RandomWeight(1024, int64_t{8} * 128, 4, Exl3Codebook::kMul1, 41);
  const HostWeight wide = RandomWeight(1024, int64_t{200} * 128, 4, Exl3Codebook::kMul1, 42);
  const exl3::Plan pn = exl3::plan(narrow.k, narrow.n), pw = exl3::plan(wide.k, wide.n);
  DeviceWeight dn = ToDevice(narrow, pn.k_splits, pn.warps);
  DeviceWeight dw = ToDevice(wide, pw.k_splits, pw.warps);
  for (const int64_t rows : {1, 16}) {
    SCOPED_TRACE(absl::StrFormat("rows %d", rows));
    const std::vector<float> x = RandomRows(rows, 1024, 43);
    const std::vector<float> want_n = RunOnce(dn.view, x, rows);
    const std::vector<float> want_w = RunOnce(dw.view, x, rows);
    auto xd = Upload(x);
    DeviceBuffer yn(rows * narrow.n * sizeof(float)), yw(rows * wide.n * sizeof(float));
    Runner runner;
    for (int i = 0; i < 4; ++i) {
      CUDA_OK(cudaMemset(yn.get(), 0xFF, yn.bytes()));
      CUDA_OK(cudaMemset(yw.get(), 0xFF, yw.bytes()));
      ASSERT_TRUE(runner.Run(dn.view, xd->as<float>(), rows, yn.as<float>()).ok());
      ASSERT_TRUE(runner.Run(dw.view, xd->as<float>(), rows, yw.as<float>()).ok());
      std::vector<float> got_n(want_n.size()), got_w(want_w.size());
      CUDA_OK(cudaMemcpy(got_n.data(), yn.get(), yn.bytes(), cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(got_w.data(), yw.get(), yw.bytes(), cudaMemcpyDeviceToHost));
      ASSERT_EQ(std::memcmp(got_n.data(), want_n.data(), yn.bytes()), 0) << "narrow, pass " << i;
      ASSERT_EQ(std::memcmp(got_w.data(), want_w.data(), yw.bytes()), 0) << "wide, pass " << i;
    }
  }
}

// ---- several weights of one input --------------------------------------------------------------

// Three weights of one k with three plans ((1, 8), (2, 4), (8, 4)), run as one Exl3Linears into
// one buffer side by side (as gate | up), against each one's own Exl3Linear.
struct Trio {
  std::vector<HostWeight> host;
  std::vector<DeviceWeight> device;
};

Trio MakeTrio(int bits, Exl3Codebook cb, uint32_t seed) {
  Trio t;
  for (const int64_t n : {int64_t{64} * 128, int64_t{10} * 128, int64_t{2} * 128}) {
    t.host.push_back(RandomWeight(1024, n, bits, cb, seed++));
    const exl3::Plan plan = exl3::plan(1024, n);
    t.device.push_back(ToDevice(t.host.back(), plan.k_splits, plan.warps));
  }
  return t;
}

// Exl3Linears of the trio's first `count` weights into one [rows, sum of n] buffer.
absl::StatusOr<std::vector<float>> RunSideBySide(const Trio& t, int count,
                                                 const std::vector<float>& x, int64_t rows,
                                                 const Context& ctx) {
  int64_t width = 0;
  for (int i = 0; i < count; ++i) width += t.host[i].n;
  auto xd = Upload(x);
  DeviceBuffer yd(rows * width * sizeof(float));
  cudaMemset(yd.get(), 0xFF, yd.bytes());
  std::vector<Exl3LinearOutput> outs;
  int64_t col = 0;
  for (int i = 0; i < count; ++i) {
    outs.push_back({&t.device[i].view, yd.as<float>() + col, width});
    col += t.host[i].n;
  }
  const absl::Status s = Exl3Linears(ctx, xd->as<float>(), 1024, rows, outs.data(), count);
  if (!s.ok()) return s;
  std::vector<float> y(rows * width);
  if (cudaMemcpy(y.data(), yd.get(), yd.bytes(), cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaDeviceSynchronize() != cudaSuccess)
    return absl::InternalError(cudaGetErrorString(cudaGetLastError()));
  return y;
}

TEST(Exl3LinearCuda, WeightsOfOneInputInOneLaunchGiveEachItsOwnBits) {
  int cases = 0;
  for (const int bits : {3, 4, 6}) {
    const Trio t = MakeTrio(bits, Exl3Codebook::kMul1, 60 + bits);
    for (const int64_t rows : {1, 5, 8, 9, 16, 17, 40, 64, 70, 130}) {  // 130: the prompt path.
      const std::vector<float> x = RandomRows(rows, 1024, 70 + rows);
      std::vector<std::vector<float>> want;
      for (const DeviceWeight& d : t.device) want.push_back(RunOnce(d.view, x, rows));
      Runner runner;
      // Automatic, each weight alone, warp units, rounds, 2-tile items.
      for (const int schedule : {0, -1, 1, 2, 20000}) {
        Context ctx = runner.context(schedule < 0 ? 0 : schedule);
        ctx.exl3_separate = schedule < 0 ? 1 : 0;
        for (const int count : {2, 3}) {
          SCOPED_TRACE(
              absl::StrFormat("K=%d rows %d schedule %d weights %d", bits, rows, schedule, count));
          auto got = RunSideBySide(t, count, x, rows, ctx);
          if (!got.ok()) {  // A forced schedule that cannot run some weight at this row count.
            ASSERT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted) << got.status();
            continue;
          }
          const int64_t width = static_cast<int64_t>(got->size()) / rows;
          int64_t col = 0;
          for (int i = 0; i < count; ++i) {
            const int64_t n = t.host[i].n;
            for (int64_t r = 0; r < rows; ++r)
              ASSERT_EQ(std::memcmp(got->data() + r * width + col, want[i].data() + r * n,
                                    n * sizeof(float)),
                        0)
                  << "weight " << i << " row " << r;
            col += n;
          }
          ++cases;
        }
      }
    }
  }
  EXPECT_GE(cases, 3 * 10 * 2 * 2);  // At least automatic and alone everywhere.
}

TEST(Exl3LinearCuda, SeveralWeightsRejectMismatchedWeightsAndBadOutputs) {
  const Trio t = MakeTrio(4, Exl3Codebook::kMul1, 90);
  const HostWeight other_bits = RandomWeight(1024, 256, 3, Exl3Codebook::kMul1, 95);
  const HostWeight other_k = RandomWeight(512, 256, 4, Exl3Codebook::kMul1, 96);
  const HostWeight other_cb = RandomWeight(1024, 256, 4, Exl3Codebook::kMcg, 97);
  DeviceWeight db = ToDevice(other_bits, 1, 4), dk = ToDevice(other_k, 1, 4),
               dc = ToDevice(other_cb, 1, 4);
  DeviceBuffer x(1024 * sizeof(float)), y(int64_t{64} * 128 * sizeof(float));
  Runner runner;
  const Context ctx = runner.context();
  for (const DeviceWeight* bad : {&db, &dk, &dc}) {
    const Exl3LinearOutput outs[] = {{&t.device[1].view, y.as<float>(), 1280},
                                     {&bad->view, y.as<float>(), 256}};
    const absl::Status s = Exl3Linears(ctx, x.as<float>(), 1024, 1, outs, 2);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("weight 1"), std::string_view::npos) << s;
  }
  const Exl3LinearOutput four[] = {{&t.device[2].view, y.as<float>(), 256},
                                   {&t.device[2].view, y.as<float>(), 256},
                                   {&t.device[2].view, y.as<float>(), 256},
                                   {&t.device[2].view, y.as<float>(), 256}};
  EXPECT_EQ(Exl3Linears(ctx, x.as<float>(), 1024, 1, four, 4).code(),
            absl::StatusCode::kInvalidArgument);
  const Exl3LinearOutput unaligned[] = {{&t.device[2].view, y.as<float>(), 256},
                                        {&t.device[2].view, y.as<float>() + 1, 256}};
  EXPECT_EQ(Exl3Linears(ctx, x.as<float>(), 1024, 1, unaligned, 2).code(),
            absl::StatusCode::kInvalidArgument);
  const Exl3LinearOutput narrow[] = {{&t.device[2].view, y.as<float>(), 256},
                                     {&t.device[1].view, y.as<float>(), 256}};  // Stride < 1280.
  EXPECT_EQ(Exl3Linears(ctx, x.as<float>(), 1024, 1, narrow, 2).code(),
            absl::StatusCode::kInvalidArgument);
  const Exl3LinearOutput null_y[] = {{&t.device[2].view, y.as<float>(), 256},
                                     {&t.device[2].view, nullptr, 256}};
  EXPECT_EQ(Exl3Linears(ctx, x.as<float>(), 1024, 1, null_y, 2).code(),
            absl::StatusCode::kInvalidArgument);
  Context small = ctx;
  small.workspace_bytes = Exl3LinearsWorkspaceBytes(four, 2, 16) - 1;
  const absl::Status s = Exl3Linears(small, x.as<float>(), 1024, 16, four, 2);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
}

// ---- the span head ---------------------------------------------------------------------------

struct SpanHead {
  std::unique_ptr<Checkpoint> checkpoint;
  exl3::Weight head;
  DeviceExl3Weight device;
};

// A head of 70 128-column blocks and k = 1024, so it plans (1, 8) as the 27B's lm_head does.
SpanHead MakeSpanHead(int bits, uint32_t seed) {
  testing::SyntheticLinear spec;
  spec.prefix = "lm_head";
  spec.k = 1024;
  spec.n = int64_t{70} * 128;
  spec.bits = bits;
  spec.codebook = exl3::Codebook::kMul1;
  spec.seed = seed;
  SpanHead s;
  s.checkpoint = testing::OpenTensors(absl::StrFormat("span_head_%d.safetensors", bits),
                                      testing::SyntheticTensors(spec));
  if (!s.checkpoint) return s;
  auto w = exl3::Weight::Load(*s.checkpoint, spec.prefix);
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return s;
  s.head = *w;
  auto d = DeviceExl3Weight::Upload(s.head);
  EXPECT_TRUE(d.ok()) << d.status();
  if (d.ok()) s.device = std::move(*d);
  return s;
}

TEST(Exl3LinearCuda, SpanHeadPacksTheFullHeadsColumnsBitForBitInOneLaunch) {
  SpanHead s = MakeSpanHead(6, 808);
  ASSERT_NE(s.checkpoint, nullptr);
  ASSERT_EQ(s.head.plan(), (exl3::Plan{1, 8}));
  // The drafter's two spans (the tail view widened to the last 64 blocks), and the same with a
  // 384-column tail view planned as the parent.
  const std::vector<exl3::ColumnSpan> spans = {{0, 3000}, {8900, 8960}};
  auto two = exl3::MakeSpanViews(s.head, spans);
  ASSERT_TRUE(two.ok()) << two.status();
  ASSERT_EQ((*two)[1].weight.first_column(), 6 * 128);
  auto tail = s.head.columns(int64_t{67} * 128, int64_t{3} * 128);
  ASSERT_TRUE(tail.ok());
  const std::vector<exl3::SpanView> tail384 = {(*two)[0], {*tail, {8900, 8960}}};
  // Spans whose packed columns are not 4-aligned with their view's (scalar stores).
  auto odd = exl3::MakeSpanViews(s.head, std::vector<exl3::ColumnSpan>{{5, 3001}, {8901, 8960}});
  ASSERT_TRUE(odd.ok()) << odd.status();
  auto full = s.device.View(s.head);
  ASSERT_TRUE(full.ok());
  const std::vector<exl3::SpanView>* cases[] = {&*two, &tail384, &*odd};
  for (const std::vector<exl3::SpanView>* views : cases) {
    std::vector<Exl3DeviceSpan> dev;
    for (const exl3::SpanView& v : *views) {
      auto d = s.device.Span(v);
      ASSERT_TRUE(d.ok()) << d.status();
      dev.push_back(*d);
    }
    const int64_t packed_size = exl3::PackedSize(*views), stride = packed_size + 4;
    for (int64_t rows : {1, 16, 64, 100}) {
      const std::vector<float> x = RandomRows(rows, s.head.k(), 900 + rows);
      const std::vector<float> y = RunOnce(*full, x, rows);
      auto xd = Upload(x);
      DeviceBuffer pd(rows * stride * sizeof(float));
      CUDA_OK(cudaMemset(pd.get(), 0xFF, pd.bytes()));
      Runner runner;
      std::vector<float> packed(rows * stride);
      for (int schedule : {0, 10}) {  // Automatic; the rotation kernel above 16 rows.
        CUDA_OK(cudaMemset(pd.get(), 0xFF, pd.bytes()));
        const absl::Status st =
            Exl3SpanLinear(runner.context(schedule), xd->as<float>(), s.head.k(), rows, dev.data(),
                           static_cast<int>(dev.size()), pd.as<float>(), stride);
        ASSERT_TRUE(st.ok()) << st;
        std::vector<float> got(rows * stride);
        CUDA_OK(cudaMemcpy(got.data(), pd.get(), pd.bytes(), cudaMemcpyDeviceToHost));
        if (schedule == 0) {
          packed = got;
        } else {
          ASSERT_EQ(std::memcmp(got.data(), packed.data(), pd.bytes()), 0) << "rows " << rows;
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        int64_t col = 0;
        for (const exl3::SpanView& v : *views) {
          ASSERT_EQ(std::memcmp(packed.data() + r * stride + col,
                                y.data() + r * s.head.n() + v.span.begin, v.size() * sizeof(float)),
                    0)
              << "rows " << rows << " row " << r << " span from " << v.span.begin << " view from "
              << v.weight.first_column();
          col += v.size();
        }
      }
      // The CPU twin, within the GPU's tolerance against the CPU op.
      std::vector<float> want(rows * packed_size), got(rows * packed_size);
      ASSERT_TRUE(
          cpu::Exl3SpanLinear(x.data(), s.head.k(), rows, *views, want.data(), packed_size, 4)
              .ok());
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(got.data() + r * packed_size, packed.data() + r * stride,
                    packed_size * sizeof(float));
      EXPECT_LE(RelFro(got, want), 1e-5) << "rows " << rows;
    }
  }
}

TEST(Exl3LinearCuda, SpanHeadDecodesOnlyTheBlocksHoldingKeptColumns) {
  SpanHead s = MakeSpanHead(6, 810);
  ASSERT_NE(s.checkpoint, nullptr);
  // The drafter's views are widened to 64 blocks; only blocks 0..23 and 69 hold kept columns.
  auto two = exl3::MakeSpanViews(s.head, std::vector<exl3::ColumnSpan>{{0, 3000}, {8900, 8960}});
  ASSERT_TRUE(two.ok()) << two.status();
  ASSERT_EQ((*two)[1].weight.n(), 64 * 128);
  auto a = s.head.columns(0, int64_t{24} * 128);
  auto tail = s.head.columns(int64_t{69} * 128, 128);
  ASSERT_TRUE(a.ok() && tail.ok());
  const std::vector<exl3::SpanView> kept = {{*a, {0, 3000}}, {*tail, {8900, 8960}}};
  auto device = [&](const std::vector<exl3::SpanView>& views) {
    std::vector<Exl3DeviceSpan> dev;
    dev.reserve(views.size());
    for (const exl3::SpanView& v : views) dev.push_back(*s.device.Span(v));
    return dev;
  };
  const std::vector<Exl3DeviceSpan> wide = device(*two), narrow = device(kept);
  // The units partials scale with the launch's column blocks, so equal bytes mean equal blocks.
  for (int64_t rows : {1, 16, 64})
    EXPECT_EQ(Exl3SpanLinearWorkspaceBytes(wide.data(), 2, rows),
              Exl3SpanLinearWorkspaceBytes(narrow.data(), 2, rows))
        << "rows " << rows;
}

TEST(Exl3LinearCuda, SpanHeadRejectsBadSpans) {
  SpanHead s = MakeSpanHead(4, 809);
  ASSERT_NE(s.checkpoint, nullptr);
  auto views = exl3::MakeSpanViews(s.head, std::vector<exl3::ColumnSpan>{{0, 300}, {8900, 8960}});
  ASSERT_TRUE(views.ok());
  std::vector<Exl3DeviceSpan> dev;
  for (const exl3::SpanView& v : *views) dev.push_back(*s.device.Span(v));
  DeviceBuffer x(s.head.k() * sizeof(float)), packed(1024 * sizeof(float));
  Runner runner;
  auto run = [&](const Exl3DeviceSpan* spans, int count, int64_t stride) {
    return Exl3SpanLinear(runner.context(), x.as<float>(), s.head.k(), 1, spans, count,
                          packed.as<float>(), stride)
        .code();
  };
  EXPECT_EQ(run(dev.data(), 2, 360), absl::StatusCode::kOk);
  EXPECT_EQ(run(dev.data(), 2, 359), absl::StatusCode::kInvalidArgument);  // Packed row is 360.
  EXPECT_EQ(run(dev.data(), 0, 360), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run(nullptr, 2, 360), absl::StatusCode::kInvalidArgument);
  std::vector<Exl3DeviceSpan> bad = dev;
  bad[1].drop_front = bad[1].view.n - 10;  // Past the view's end.
  EXPECT_EQ(run(bad.data(), 2, 360), absl::StatusCode::kInvalidArgument);
  bad = dev;
  bad[1].view.warps = 4;  // Not planned as the head.
  EXPECT_EQ(run(bad.data(), 2, 360), absl::StatusCode::kInvalidArgument);
  std::vector<Exl3DeviceSpan> many(kMaxExl3Spans + 1, dev[0]);
  EXPECT_EQ(run(many.data(), kMaxExl3Spans + 1, int64_t{360} * 8),
            absl::StatusCode::kInvalidArgument);
  CUDA_OK(cudaDeviceSynchronize());
}

// ---- the CPU op on random weights, through exl3::Weight ---------------------------------

// GPU against cpu::Exl3Linear: the same xh bits and exact products, so only the fp32 sum order
// inside a group of k-tiles differs.
TEST(Exl3LinearCuda, MatchesTheCpuOpForEveryCodebookWidthRowCountAndView) {
  double worst = 0;
  for (exl3::Codebook cb : {exl3::Codebook::k3Inst, exl3::Codebook::kMcg, exl3::Codebook::kMul1})
    for (int K = 1; K <= 8; ++K) {
      testing::SyntheticLinear spec;
      spec.k = K % 2 ? 512 : 1024;
      spec.n = 640;
      spec.bits = K;
      spec.codebook = cb;
      spec.bias = K % 3 == 0;
      spec.seed = 40 + K + 10 * static_cast<int>(cb);
      auto ckpt = testing::OpenTensors(
          absl::StrFormat("cuda_parity_%d_%d.safetensors", static_cast<int>(cb), K),
          testing::SyntheticTensors(spec));
      ASSERT_NE(ckpt, nullptr);
      auto w = exl3::Weight::Load(*ckpt, spec.prefix);
      ASSERT_TRUE(w.ok()) << w.status();
      auto dev = DeviceExl3Weight::Upload(*w);
      ASSERT_TRUE(dev.ok()) << dev.status();
      auto view = w->columns(256, 256);
      ASSERT_TRUE(view.ok()) << view.status();
      for (const exl3::Weight* part : {&*w, &*view}) {
        auto dv = dev->View(*part);
        ASSERT_TRUE(dv.ok()) << dv.status();
        for (int64_t rows : {1, 7, 16, 20, 33, 64}) {
          const std::vector<float> x = testing::RandomRows(rows, part->k(), 9 + K + rows);
          std::vector<float> want(rows * part->n());
          ASSERT_TRUE(
              cpu::Exl3Linear(x.data(), part->k(), rows, *part, want.data(), part->n()).ok());
          const double err = RelFro(RunOnce(*dv, x, rows), want);
          worst = std::max(worst, err);
          EXPECT_LE(err, 1e-5) << exl3::CodebookName(cb) << " K" << K << " rows " << rows
                               << " first column " << part->first_column();
        }
      }
    }
  std::printf("worst rel_fro against the CPU op: %.3g\n", worst);
}

TEST(Exl3LinearCuda, UploadRefusesAViewAndViewRefusesAnotherWeight) {
  testing::SyntheticLinear spec;
  auto ckpt = testing::OpenTensors("cuda_upload.safetensors", testing::SyntheticTensors(spec));
  ASSERT_NE(ckpt, nullptr);
  auto w = exl3::Weight::Load(*ckpt, spec.prefix);
  ASSERT_TRUE(w.ok());
  auto view = w->columns(128, 128);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(DeviceExl3Weight::Upload(*view).status().code(), absl::StatusCode::kInvalidArgument);
  testing::SyntheticLinear other = spec;
  other.prefix = "other";
  other.bits = spec.bits + 1;
  auto ckpt2 = testing::OpenTensors("cuda_upload2.safetensors", testing::SyntheticTensors(other));
  ASSERT_NE(ckpt2, nullptr);
  auto w2 = exl3::Weight::Load(*ckpt2, other.prefix);
  ASSERT_TRUE(w2.ok());
  auto dev = DeviceExl3Weight::Upload(*w);
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(dev->View(*w2).status().code(), absl::StatusCode::kInvalidArgument);
}

// ---- argument checks ------------------------------------------------------------------------

TEST(Exl3LinearCuda, RejectsBadShapesPlansAndWorkspace) {
  const HostWeight h = RandomWeight(256, 128, 4, Exl3Codebook::kMul1, 5);
  DeviceWeight d = ToDevice(h, 1, 4);
  DeviceBuffer x(h.k * sizeof(float)), y(h.n * sizeof(float));
  Runner runner;
  Exl3DeviceWeight bad = d.view;
  bad.k_splits = 3;
  EXPECT_EQ(runner.Run(bad, x.as<float>(), 1, y.as<float>()).code(),
            absl::StatusCode::kInvalidArgument);
  bad = d.view;
  bad.bits = 9;
  EXPECT_EQ(runner.Run(bad, x.as<float>(), 1, y.as<float>()).code(),
            absl::StatusCode::kInvalidArgument);
  bad = d.view;
  bad.n = 100;
  EXPECT_EQ(runner.Run(bad, x.as<float>(), 1, y.as<float>()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(runner.Run(d.view, x.as<float>() + 1, 1, y.as<float>()).code(),
            absl::StatusCode::kInvalidArgument);  // x not 16-byte aligned.
  EXPECT_EQ(runner.Run(d.view, x.as<float>(), 1, y.as<float>() + 2).code(),
            absl::StatusCode::kInvalidArgument);  // y not 16-byte aligned.
  bad = d.view;
  bad.trellis += 1;
  EXPECT_EQ(runner.Run(bad, x.as<float>(), 1, y.as<float>()).code(),
            absl::StatusCode::kInvalidArgument);  // Trellis not 16-byte aligned.
  bad = d.view;
  bad.warps = 3;  // (1, 3) does not divide the 16 k-tiles of k = 256.
  EXPECT_EQ(runner.Run(bad, x.as<float>(), 1, y.as<float>()).code(),
            absl::StatusCode::kInvalidArgument);
  Context small;
  DeviceBuffer ws(16);
  small.workspace = ws.get();
  small.workspace_bytes = 16;
  EXPECT_EQ(Exl3Linear(small, x.as<float>(), h.k, 1, d.view, y.as<float>(), h.n).code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace twinspan::cuda
