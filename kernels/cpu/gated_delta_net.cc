#include "kernels/cpu/gated_delta_net.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernels/cpu/tree_rows.h"

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

// One row of one value head: advances that head's state s [k_dim, v_dim] in place and writes the
// row's output o [v_dim]. q, k, mem, delta: scratch of k_dim, k_dim, v_dim, v_dim floats.
void StepHead(const float* row, float g, float beta, const GatedDeltaNetDims& d, int64_t h,
              float* s, float* o, float* q, float* k, float* mem, float* delta) {
  const int64_t kh = h / (d.v_heads / d.k_heads);
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(d.k_dim));
  L2Normalize(row + kh * d.k_dim, d.k_dim, q_scale, q);
  L2Normalize(row + (d.k_heads + kh) * d.k_dim, d.k_dim, 1.0f, k);
  const float* v = row + 2 * d.k_heads * d.k_dim + h * d.v_dim;
  const float decay = std::exp(g);

  // Decay the state and read it at k: mem = S^T k, summed over the key index in order.
  for (int64_t j = 0; j < d.v_dim; ++j) mem[j] = 0.0f;
  for (int64_t i = 0; i < d.k_dim; ++i) {
    float* si = s + i * d.v_dim;
    for (int64_t j = 0; j < d.v_dim; ++j) {
      si[j] *= decay;
      mem[j] += si[j] * k[i];
    }
  }
  for (int64_t j = 0; j < d.v_dim; ++j) delta[j] = (v[j] - mem[j]) * beta;

  // Write k delta^T, then read the new state at q.
  for (int64_t j = 0; j < d.v_dim; ++j) o[j] = 0.0f;
  for (int64_t i = 0; i < d.k_dim; ++i) {
    float* si = s + i * d.v_dim;
    for (int64_t j = 0; j < d.v_dim; ++j) {
      si[j] += k[i] * delta[j];
      o[j] += si[j] * q[i];
    }
  }
}

// Scratch of one StepHead caller.
struct HeadScratch {
  explicit HeadScratch(const GatedDeltaNetDims& d)
      : q(d.k_dim), k(d.k_dim), mem(d.v_dim), delta(d.v_dim) {}
  std::vector<float> q, k, mem, delta;
};

// One value head over all rows; touches only its own slice of state and out.
void RunHead(const float* qkv, const float* g, const float* beta, int64_t rows,
             const GatedDeltaNetDims& d, int64_t h, float* state, float* out) {
  HeadScratch t(d);
  float* s = state + h * d.k_dim * d.v_dim;
  for (int64_t r = 0; r < rows; ++r) {
    StepHead(qkv + r * d.qkv_width(), g[r * d.v_heads + h], beta[r * d.v_heads + h], d, h, s,
             out + (r * d.v_heads + h) * d.v_dim, t.q.data(), t.k.data(), t.mem.data(),
             t.delta.data());
  }
}

// One value head over a tree's rows: each row steps a copy of its parent's state (the start state
// for the root), so it sees exactly the state its path's chain would give it.
void RunHeadTree(const float* qkv, const float* g, const float* beta, const int32_t* parents,
                 int64_t rows, const GatedDeltaNetDims& d, int64_t h, const float* state,
                 float* out) {
  HeadScratch t(d);
  const int64_t size = d.k_dim * d.v_dim;
  std::vector<float> states(rows * size);  // [rows, k_dim, v_dim]: the state after each row
  for (int64_t r = 0; r < rows; ++r) {
    const float* from = r == 0 ? state + h * size : states.data() + parents[r] * size;
    float* s = states.data() + r * size;
    std::copy(from, from + size, s);
    StepHead(qkv + r * d.qkv_width(), g[r * d.v_heads + h], beta[r * d.v_heads + h], d, h, s,
             out + (r * d.v_heads + h) * d.v_dim, t.q.data(), t.k.data(), t.mem.data(),
             t.delta.data());
  }
}

absl::Status CheckDims(const char* op, int64_t rows, const GatedDeltaNetDims& dims) {
  if (rows < 0 || dims.k_heads <= 0 || dims.v_heads <= 0 || dims.k_dim <= 0 || dims.v_dim <= 0 ||
      dims.v_heads % dims.k_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: rows %d, k_heads %d, v_heads %d, k_dim %d, v_dim %d", op, rows,
                        dims.k_heads, dims.v_heads, dims.k_dim, dims.v_dim));
  }
  return absl::OkStatus();
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
  if (absl::Status s = CheckDims("GatedDeltaNet", rows, dims); !s.ok()) return s;
  ParallelFor(ctx.pool, dims.v_heads, 1, [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h) RunHead(qkv, g, beta, rows, dims, h, state, out);
  });
  return absl::OkStatus();
}

absl::Status GatedDeltaNetTree(const Context& ctx, const float* qkv, const float* g,
                               const float* beta, const int32_t* parents, int64_t rows,
                               const GatedDeltaNetDims& dims, const float* state, float* out) {
  if (absl::Status s = CheckDims("GatedDeltaNetTree", rows, dims); !s.ok()) return s;
  if (absl::Status s = CheckTreeParents("GatedDeltaNetTree", parents, rows); !s.ok()) return s;
  ParallelFor(ctx.pool, dims.v_heads, 1, [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h) {
      RunHeadTree(qkv, g, beta, parents, rows, dims, h, state, out);
    }
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
