// The Gated DeltaNet ops against direct double-precision formulas, and their row invariance.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/causal_conv1d.h"
#include "kernels/cpu/gated_delta_net.h"
#include "kernels/cpu/gated_rms_norm.h"

namespace twinspan::cpu {
namespace {

std::vector<float> Random(size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

double Silu(double x) { return x / (1.0 + std::exp(-x)); }

void ExpectNear(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::abs(want[i]))) << "index " << i;
  }
}

TEST(CausalConv1dTest, MatchesDirectSumWithHistory) {
  const int rows = 5, channels = 7, kernel = 4;
  auto x = Random(rows * channels, 1);
  auto w = Random(channels * kernel, 2, 0.5f);
  auto state = Random((kernel - 1) * channels, 3);
  // in = state rows then x rows, time-major.
  std::vector<double> in;
  for (float v : state) in.push_back(v);
  for (float v : x) in.push_back(v);
  std::vector<double> want(rows * channels);
  for (int t = 0; t < rows; ++t) {
    for (int c = 0; c < channels; ++c) {
      double s = 0;
      for (int j = 0; j < kernel; ++j) s += w[c * kernel + j] * in[(t + j) * channels + c];
      want[t * channels + c] = Silu(s);
    }
  }
  std::vector<float> y(rows * channels);
  std::vector<float> st = state;
  ASSERT_TRUE(
      CausalConv1d(Context{}, x.data(), rows, channels, w.data(), kernel, st.data(), y.data())
          .ok());
  ExpectNear(y, want, 1e-5);
  // The state now holds the last kernel - 1 inputs.
  for (int j = 0; j < kernel - 1; ++j) {
    for (int c = 0; c < channels; ++c) {
      EXPECT_EQ(st[j * channels + c], x[(rows - kernel + 1 + j) * channels + c]);
    }
  }
}

TEST(CausalConv1dTest, WindowEqualsSingleRowsBitForBit) {
  const int rows = 9, channels = 33, kernel = 4;
  auto x = Random(rows * channels, 4);
  auto w = Random(channels * kernel, 5, 0.5f);
  auto state0 = Random((kernel - 1) * channels, 6);
  std::vector<float> st_a = state0, st_b = state0, y_a(rows * channels), y_b(rows * channels);
  ASSERT_TRUE(
      CausalConv1d(Context{}, x.data(), rows, channels, w.data(), kernel, st_a.data(), y_a.data())
          .ok());
  for (int t = 0; t < rows; ++t) {
    ASSERT_TRUE(CausalConv1d(Context{}, x.data() + t * channels, 1, channels, w.data(), kernel,
                             st_b.data(), y_b.data() + t * channels)
                    .ok());
  }
  EXPECT_EQ(0, std::memcmp(y_a.data(), y_b.data(), y_a.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(st_a.data(), st_b.data(), st_a.size() * sizeof(float)));
}

TEST(GatedRmsNormTest, MatchesFormulaWithUncentredWeight) {
  const int groups = 3, dim = 16;
  auto x = Random(groups * dim, 7);
  auto z = Random(groups * dim, 8);
  auto w = Random(dim, 9);
  std::vector<double> want(groups * dim);
  for (int g = 0; g < groups; ++g) {
    double ss = 0;
    for (int i = 0; i < dim; ++i) ss += double(x[g * dim + i]) * x[g * dim + i];
    const double inv = 1.0 / std::sqrt(ss / dim + 1e-6);
    for (int i = 0; i < dim; ++i) {
      want[g * dim + i] = x[g * dim + i] * inv * w[i] * Silu(z[g * dim + i]);
    }
  }
  std::vector<float> y(groups * dim);
  ASSERT_TRUE(
      GatedRmsNorm(Context{}, x.data(), z.data(), groups, dim, w.data(), 1e-6f, y.data()).ok());
  ExpectNear(y, want, 1e-5);
}

TEST(GatedDeltaNetGatesTest, MatchesFormulaIncludingSoftplusThreshold) {
  const int rows = 2, heads = 3;
  std::vector<float> a = {-3.0f, 0.5f, 25.0f, 1.0f, -0.25f, 19.0f};
  std::vector<float> b = {-1.0f, 0.0f, 2.0f, 5.0f, -7.0f, 0.3f};
  std::vector<float> a_log = {0.1f, -0.5f, 1.2f}, dt_bias = {1.0f, 0.2f, 2.0f};
  std::vector<float> g(rows * heads), beta(rows * heads);
  ASSERT_TRUE(GatedDeltaNetGates(Context{}, a.data(), b.data(), heads, rows, heads, a_log.data(),
                                 dt_bias.data(), g.data(), beta.data())
                  .ok());
  for (int t = 0; t < rows; ++t) {
    for (int h = 0; h < heads; ++h) {
      const double u = double(a[t * heads + h]) + dt_bias[h];
      const double sp = u > 20 ? u : std::log1p(std::exp(u));
      EXPECT_NEAR(g[t * heads + h], -std::exp(double(a_log[h])) * sp, 1e-5 * (1 + std::abs(sp)));
      EXPECT_NEAR(beta[t * heads + h], 1.0 / (1.0 + std::exp(-double(b[t * heads + h]))), 1e-6);
    }
  }
}

// The GDN block's one [rows, 2 * heads] projection: a and b read with its row stride give the
// packed inputs' bits.
TEST(GatedDeltaNetGatesTest, StridedRowsEqualPackedRows) {
  const int64_t rows = 3, heads = 4;
  std::vector<float> ab(rows * 2 * heads), a(rows * heads), b(rows * heads);
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      a[t * heads + h] = ab[t * 2 * heads + h] = 0.7f * static_cast<float>(t - h) + 0.1f;
      b[t * heads + h] = ab[t * 2 * heads + heads + h] = 0.3f * static_cast<float>(h * t) - 1.0f;
    }
  }
  const std::vector<float> a_log = {0.1f, -0.5f, 1.2f, 0.0f}, dt_bias = {1.0f, 0.2f, 2.0f, -1.0f};
  std::vector<float> g(rows * heads), beta(rows * heads), g_ab(g.size()), beta_ab(g.size());
  ASSERT_TRUE(GatedDeltaNetGates(Context{}, a.data(), b.data(), heads, rows, heads, a_log.data(),
                                 dt_bias.data(), g.data(), beta.data())
                  .ok());
  ASSERT_TRUE(GatedDeltaNetGates(Context{}, ab.data(), ab.data() + heads, 2 * heads, rows, heads,
                                 a_log.data(), dt_bias.data(), g_ab.data(), beta_ab.data())
                  .ok());
  EXPECT_EQ(g_ab, g);
  EXPECT_EQ(beta_ab, beta);
}

// Direct double-precision recurrence with explicit GQA repeat, written from the HF formulas.
void ReferenceDeltaRule(const std::vector<float>& qkv, const std::vector<float>& g,
                        const std::vector<float>& beta, int rows, const GatedDeltaNetDims& d,
                        std::vector<double>& state, std::vector<double>& out) {
  const int width = d.qkv_width();
  out.assign(rows * d.v_heads * d.v_dim, 0.0);
  for (int t = 0; t < rows; ++t) {
    for (int h = 0; h < d.v_heads; ++h) {
      const int kh = h / (d.v_heads / d.k_heads);
      std::vector<double> q(d.k_dim), k(d.k_dim);
      double qs = 0, ks = 0;
      for (int i = 0; i < d.k_dim; ++i) {
        q[i] = qkv[t * width + kh * d.k_dim + i];
        k[i] = qkv[t * width + (d.k_heads + kh) * d.k_dim + i];
        qs += q[i] * q[i];
        ks += k[i] * k[i];
      }
      for (int i = 0; i < d.k_dim; ++i) {
        q[i] = q[i] / std::sqrt(qs + 1e-6) / std::sqrt(double(d.k_dim));
        k[i] = k[i] / std::sqrt(ks + 1e-6);
      }
      double* s = &state[h * d.k_dim * d.v_dim];
      const double decay = std::exp(double(g[t * d.v_heads + h]));
      for (int i = 0; i < d.k_dim * d.v_dim; ++i) s[i] *= decay;
      for (int j = 0; j < d.v_dim; ++j) {
        double mem = 0;
        for (int i = 0; i < d.k_dim; ++i) mem += s[i * d.v_dim + j] * k[i];
        const double v = qkv[t * width + 2 * d.k_heads * d.k_dim + h * d.v_dim + j];
        const double delta = (v - mem) * beta[t * d.v_heads + h];
        for (int i = 0; i < d.k_dim; ++i) s[i * d.v_dim + j] += k[i] * delta;
      }
      for (int j = 0; j < d.v_dim; ++j) {
        double o = 0;
        for (int i = 0; i < d.k_dim; ++i) o += s[i * d.v_dim + j] * q[i];
        out[(t * d.v_heads + h) * d.v_dim + j] = o;
      }
    }
  }
}

TEST(GatedDeltaNetTest, MatchesDirectRecurrenceWithGqaRepeat) {
  const GatedDeltaNetDims d{.k_heads = 2, .v_heads = 6, .k_dim = 8, .v_dim = 12};
  const int rows = 11;
  auto qkv = Random(rows * d.qkv_width(), 10);
  auto g = Random(rows * d.v_heads, 11, 0.3f);
  for (float& x : g) x = -std::abs(x);
  auto beta = Random(rows * d.v_heads, 12);
  for (float& x : beta) x = 1.0f / (1.0f + std::exp(-x));
  auto state0 = Random(d.state_size(), 13, 0.2f);
  std::vector<double> ref_state(state0.begin(), state0.end()), ref_out;
  ReferenceDeltaRule(qkv, g, beta, rows, d, ref_state, ref_out);
  std::vector<float> state = state0, out(rows * d.v_heads * d.v_dim);
  ASSERT_TRUE(
      GatedDeltaNet(Context{}, qkv.data(), g.data(), beta.data(), rows, d, state.data(), out.data())
          .ok());
  ExpectNear(out, ref_out, 1e-4);
  ExpectNear(state, ref_state, 1e-4);
}

TEST(GatedDeltaNetTest, WindowEqualsSingleRowsBitForBit) {
  const GatedDeltaNetDims d{.k_heads = 2, .v_heads = 4, .k_dim = 16, .v_dim = 8};
  const int rows = 13;
  auto qkv = Random(rows * d.qkv_width(), 14);
  auto g = Random(rows * d.v_heads, 15, 0.3f);
  for (float& x : g) x = -std::abs(x);
  auto beta = Random(rows * d.v_heads, 16);
  for (float& x : beta) x = 1.0f / (1.0f + std::exp(-x));
  auto state0 = Random(d.state_size(), 17, 0.2f);
  ThreadPool pool(3);  // The single-row runs also use threads: the split must not matter.
  std::vector<float> st_a = state0, st_b = state0;
  std::vector<float> out_a(rows * d.v_heads * d.v_dim), out_b(out_a.size());
  ASSERT_TRUE(GatedDeltaNet(Context{}, qkv.data(), g.data(), beta.data(), rows, d, st_a.data(),
                            out_a.data())
                  .ok());
  for (int t = 0; t < rows; ++t) {
    ASSERT_TRUE(GatedDeltaNet(Context{&pool}, qkv.data() + t * d.qkv_width(),
                              g.data() + t * d.v_heads, beta.data() + t * d.v_heads, 1, d,
                              st_b.data(), out_b.data() + t * d.v_heads * d.v_dim)
                    .ok());
  }
  EXPECT_EQ(0, std::memcmp(out_a.data(), out_b.data(), out_a.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(st_a.data(), st_b.data(), st_a.size() * sizeof(float)));
}

TEST(GatedDeltaNetOpsTest, RejectBadShapes) {
  float x = 0;
  const GatedDeltaNetDims uneven{.k_heads = 2, .v_heads = 3, .k_dim = 4, .v_dim = 4};
  EXPECT_EQ(GatedDeltaNet(Context{}, &x, &x, &x, 1, uneven, &x, &x).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CausalConv1d(Context{}, &x, 1, 0, &x, 4, &x, &x).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GatedRmsNorm(Context{}, &x, &x, 1, 0, &x, 1e-6f, &x).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GatedDeltaNetGates(Context{}, &x, &x, 1, -1, 1, &x, &x, &x, &x).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GatedDeltaNetGates(Context{}, &x, &x, 2, 1, 3, &x, &x, &x, &x).code(),
            absl::StatusCode::kInvalidArgument);  // a and b rows narrower than v_heads.
}

}  // namespace
}  // namespace twinspan::cpu
