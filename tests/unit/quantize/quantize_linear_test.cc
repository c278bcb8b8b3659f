// One linear end to end (common/exl3/quantize/quantize_linear.h): the stored tensors load through
// exl3::Weight::Load and decode to the quantizer's own reconstruction bit for bit, the proxy error
// stays within exllamav3's per-K bounds (tests/test_quant_fn.py: 0.5 / 0.1 / 0.05 / 0.01 / 0.005
// for K = 1 / 2 / 3 / 4 / >= 5), results are deterministic for any thread count, bad input is
// refused.
#include "common/exl3/quantize/quantize_linear.h"

#include <cmath>
#include <random>
#include <vector>

#include "common/exl3/dequant.h"
#include "common/exl3/quantize/hessian.h"
#include "common/exl3/weight.h"
#include "common/safetensors/half.h"
#include "gtest/gtest.h"
#include "tests/unit/formats_exl3_fixture.h"

namespace twinspan::exl3::quantize {
namespace {

constexpr double kProxyBound[9] = {0, 0.5, 0.1, 0.05, 0.01, 0.005, 0.005, 0.005, 0.005};

struct Problem {
  int64_t k = 256, n = 384;
  std::vector<float> w;  // [k, n]
  std::vector<float> h;  // [k, k]
};

// The golden problems' recipe (shared/golden/README.md section 1): scaled Gaussian W, inputs with
// per-channel scales, so the Hessian is far from the identity.
Problem MakeProblem(int64_t k, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  Problem p{k, n, std::vector<float>(k * n), {}};
  std::vector<float> row_scale(k), col_scale(n), in_scale(k);
  for (float& s : row_scale) s = std::exp(0.3f * normal(rng));
  for (float& s : col_scale) s = std::exp(0.3f * normal(rng));
  for (float& s : in_scale) s = std::exp(0.5f * normal(rng));
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < n; ++j)
      p.w[i * n + j] = 0.02f * normal(rng) * row_scale[i] * col_scale[j];
  }
  const int64_t rows = 256;
  std::vector<float> x(rows * k);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < k; ++i) x[r * k + i] = normal(rng) * in_scale[i];
  }
  HessianAccumulator acc(k);
  acc.Add(nullptr, x.data(), rows, k);
  p.h = acc.Mean();
  return p;
}

absl::StatusOr<QuantizedLinear> Quantize(const Problem& p, int bits, Codebook codebook,
                                         cpu::ThreadPool* pool, bool calibrated = true) {
  const CpuTileEncoder encoder(pool);
  LinearQuantOptions o;
  o.bits = bits;
  o.codebook = codebook;
  o.seed = 42;
  return QuantizeLinear(pool, encoder,
                        {p.w.data(), p.k, p.n, calibrated ? p.h : std::vector<float>{}, {}}, o);
}

TEST(QuantizeLinearTest, StoredTensorsLoadAndDecodeToTheReconstruction) {
  cpu::ThreadPool pool(2);
  const Problem p = MakeProblem(128, 256, 1);
  std::vector<float> bias(p.n);
  for (int64_t j = 0; j < p.n; ++j) bias[j] = 0.01f * static_cast<float>(j);
  const CpuTileEncoder encoder(&pool);
  LinearQuantOptions o;
  o.bits = 3;
  o.codebook = Codebook::kMcg;
  absl::StatusOr<QuantizedLinear> q =
      QuantizeLinear(&pool, encoder, {p.w.data(), p.k, p.n, p.h, bias}, o);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_TRUE(q->calibrated);
  const auto ckpt = testing::OpenTensors("quantized.safetensors", StoredTensors("lin", *q));
  ASSERT_NE(ckpt, nullptr);
  absl::StatusOr<Weight> w = Weight::Load(*ckpt, "lin");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->bits(), 3);
  EXPECT_EQ(w->codebook(), Codebook::kMcg);
  EXPECT_EQ(w->k(), p.k);
  EXPECT_EQ(w->n(), p.n);
  ASSERT_TRUE(w->has_bias());
  EXPECT_EQ(w->bias()[7], HalfToFloat(FloatToHalf(0.07f)));
  EXPECT_EQ(DequantizeDense(*w), q->dequantized);
}

TEST(QuantizeLinearTest, ProxyErrorWithinExllamav3BoundsPerK) {
  cpu::ThreadPool pool(2);
  const Problem p = MakeProblem(256, 128, 2);
  double previous = 1.0;
  for (const int bits : {2, 4, 6}) {
    absl::StatusOr<QuantizedLinear> q = Quantize(p, bits, Codebook::kMul1, &pool);
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_LT(q->proxy_error, kProxyBound[bits]) << "K=" << bits;
    EXPECT_LT(q->proxy_error, previous) << "K=" << bits;  // Each bit helps.
    previous = q->proxy_error;
  }
}

TEST(QuantizeLinearTest, CalibrationLowersTheProxyError) {
  const Problem p = MakeProblem(128, 128, 3);
  cpu::ThreadPool pool(2);
  absl::StatusOr<QuantizedLinear> with = Quantize(p, 3, Codebook::k3Inst, &pool);
  absl::StatusOr<QuantizedLinear> without = Quantize(p, 3, Codebook::k3Inst, &pool, false);
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_FALSE(without->calibrated);
  EXPECT_LT(with->proxy_error, without->proxy_error);
  EXPECT_LT(with->proxy_error, 0.05);
  // Without a Hessian the proxy error is the plain relative squared error.
  double e = 0, w = 0;
  for (size_t i = 0; i < p.w.size(); ++i) {
    e += (double{p.w[i]} - without->dequantized[i]) * (double{p.w[i]} - without->dequantized[i]);
    w += double{p.w[i]} * p.w[i];
  }
  EXPECT_NEAR(without->proxy_error, e / w, 1e-9);
}

TEST(QuantizeLinearTest, DeterministicForASeedAndAnyThreadCount) {
  const Problem p = MakeProblem(128, 128, 4);
  cpu::ThreadPool pool(2);
  absl::StatusOr<QuantizedLinear> a = Quantize(p, 4, Codebook::kMul1, nullptr);
  absl::StatusOr<QuantizedLinear> b = Quantize(p, 4, Codebook::kMul1, &pool);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->trellis, b->trellis);
  EXPECT_EQ(a->suh, b->suh);
  EXPECT_EQ(a->svh, b->svh);
  EXPECT_EQ(a->proxy_error, b->proxy_error);
}

TEST(QuantizeLinearTest, ZeroColumnsStayZero) {
  Problem p = MakeProblem(128, 128, 5);
  for (int64_t i = 0; i < p.k; ++i) p.w[i * p.n + 17] = 0.0f;
  cpu::ThreadPool pool(2);
  absl::StatusOr<QuantizedLinear> q = Quantize(p, 4, Codebook::kMul1, &pool);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->svh[17], 0);
  for (int64_t i = 0; i < p.k; ++i) ASSERT_EQ(q->dequantized[i * p.n + 17], 0.0f);
}

TEST(QuantizeLinearTest, RefusesBadInput) {
  const Problem p = MakeProblem(128, 128, 6);
  const CpuTileEncoder encoder(nullptr);
  LinearQuantOptions o;
  EXPECT_EQ(QuantizeLinear(nullptr, encoder, {p.w.data(), 100, 128, {}, {}}, o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.bits = 9;
  EXPECT_EQ(QuantizeLinear(nullptr, encoder, {p.w.data(), 128, 128, {}, {}}, o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.bits = 4;
  const std::vector<float> small_h(10, 1.0f);
  EXPECT_EQ(
      QuantizeLinear(nullptr, encoder, {p.w.data(), 128, 128, small_h, {}}, o).status().code(),
      absl::StatusCode::kInvalidArgument);
  std::vector<float> w = p.w;
  w[5] = NAN;
  const absl::Status nan =
      QuantizeLinear(nullptr, encoder, {w.data(), 128, 128, {}, {}}, o).status();
  EXPECT_EQ(nan.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(nan.message().find("(0, 5)"), std::string::npos) << nan;
}

}  // namespace
}  // namespace twinspan::exl3::quantize
