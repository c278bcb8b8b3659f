#include "kernels/cpu/gated_delta_net.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"

namespace twinspan::cpu {
namespace {

// out = x / sqrt(sum(x^2) + 1e-6) * scale: the FLA/HF l2norm, then the query scale.
void L2Normalize(const float* x, int64_t n, float scale, float* out) {
  float sum_sq = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum_sq += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(sum_sq + 1e-6f);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * scale;
}

// Torch's softplus (beta 1, threshold 20).
float Softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// One value head over all rows; touches only its own slice of state and out.
void RunHead(const float* qkv, const float* g, const float* beta, int64_t rows,
             const GatedDeltaNetDims& d, int64_t h, float* state, float* out) {
  const int64_t width = d.qkv_width();
  const int64_t kh = h / (d.v_heads / d.k_heads);
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(d.k_dim));
  std::vector<float> q(d.k_dim), k(d.k_dim), mem(d.v_dim), delta(d.v_dim);
  float* s = state + h * d.k_dim * d.v_dim;
  for (int64_t t = 0; t < rows; ++t) {
    const float* row = qkv + t * width;
    L2Normalize(row + kh * d.k_dim, d.k_dim, q_scale, q.data());
    L2Normalize(row + (d.k_heads + kh) * d.k_dim, d.k_dim, 1.0f, k.data());
    const float* v = row + 2 * d.k_heads * d.k_dim + h * d.v_dim;
    const float decay = std::exp(g[t * d.v_heads + h]);
    const float b = beta[t * d.v_heads + h];

    // Decay the state and read it at k: mem = S^T k, summed over the key index in order.
    for (int64_t j = 0; j < d.v_dim; ++j) mem[j] = 0.0f;
    for (int64_t i = 0; i < d.k_dim; ++i) {
      float* si = s + i * d.v_dim;
      for (int64_t j = 0; j < d.v_dim; ++j) {
        si[j] *= decay;
        mem[j] += si[j] * k[i];
      }
    }
    for (int64_t j = 0; j < d.v_dim; ++j) delta[j] = (v[j] - mem[j]) * b;

    // Write k delta^T, then read the new state at q.
    float* o = out + (t * d.v_heads + h) * d.v_dim;
    for (int64_t j = 0; j < d.v_dim; ++j) o[j] = 0.0f;
    for (int64_t i = 0; i < d.k_dim; ++i) {
      float* si = s + i * d.v_dim;
      for (int64_t j = 0; j < d.v_dim; ++j) {
        si[j] += k[i] * delta[j];
        o[j] += si[j] * q[i];
      }
    }
  }
}

}  // namespace

absl::Status GatedDeltaNetGates(const Context& ctx, const float* a, const float* b,
                                int64_t ab_stride, int64_t rows, int64_t v_heads,
                                const float* a_log, const float* dt_bias, float* g, float* beta) {
  if (rows < 0 || v_heads <= 0 || ab_stride < v_heads) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GatedDeltaNetGates: rows %d, v_heads %d, ab_stride %d", rows, v_heads, ab_stride));
  }
  ParallelFor(ctx.pool, rows, 64, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      for (int64_t h = 0; h < v_heads; ++h) {
        const int64_t i = t * v_heads + h, j = t * ab_stride + h;
        g[i] = -std::exp(a_log[h]) * Softplus(a[j] + dt_bias[h]);
        beta[i] = 1.0f / (1.0f + std::exp(-b[j]));
      }
    }
  });
  return absl::OkStatus();
}

absl::Status GatedDeltaNet(const Context& ctx, const float* qkv, const float* g, const float* beta,
                           int64_t rows, const GatedDeltaNetDims& dims, float* state, float* out) {
  if (rows < 0 || dims.k_heads <= 0 || dims.v_heads <= 0 || dims.k_dim <= 0 || dims.v_dim <= 0 ||
      dims.v_heads % dims.k_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("GatedDeltaNet: rows %d, k_heads %d, v_heads %d, k_dim %d, v_dim %d", rows,
                        dims.k_heads, dims.v_heads, dims.k_dim, dims.v_dim));
  }
  ParallelFor(ctx.pool, dims.v_heads, 1, [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h) RunHead(qkv, g, beta, rows, dims, h, state, out);
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
