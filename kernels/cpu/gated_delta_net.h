// The gated delta rule of Gated DeltaNet (Qwen3.5 / Qwen3-Next linear attention), recurrent form.
#ifndef TWINSPAN_KERNELS_CPU_GATED_DELTA_NET_H_
#define TWINSPAN_KERNELS_CPU_GATED_DELTA_NET_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

// Shapes of one Gated DeltaNet layer. Value head h reads key head h / (v_heads / k_heads).
struct GatedDeltaNetDims {
  int64_t k_heads = 0;  // Query/key heads.
  int64_t v_heads = 0;  // Value heads; a multiple of k_heads.
  int64_t k_dim = 0;    // Per-head query/key width.
  int64_t v_dim = 0;    // Per-head value width.

  int64_t qkv_width() const { return 2 * k_heads * k_dim + v_heads * v_dim; }
  int64_t state_size() const { return v_heads * k_dim * v_dim; }
};

// Per-row decay and write strength from the projections a and b:
//   g = -exp(a_log) * softplus(a + dt_bias)   (softplus(x) = x above 20, as torch)
//   beta = sigmoid(b)
// a, b: rows of ab_stride floats, v_heads used (one [rows, 2 * v_heads] projection serves both);
// g, beta: [rows, v_heads] packed; a_log, dt_bias: [v_heads].
// InvalidArgument for rows < 0, v_heads <= 0 or ab_stride < v_heads.
absl::Status GatedDeltaNetGates(const Context& ctx, const float* a, const float* b,
                                int64_t ab_stride, int64_t rows, int64_t v_heads,
                                const float* a_log, const float* dt_bias, float* g, float* beta);

// Runs the recurrence over `rows` tokens one at a time, so a window of k rows gives the same bits
// as k calls of one row. Per row and value head, with q and k l2-normalised (eps 1e-6) and q then
// scaled by 1 / sqrt(k_dim):
//   S *= exp(g); delta = (v - S^T k) * beta; S += k delta^T; out = S^T q
// qkv: [rows, qkv_width] = [q (k_heads x k_dim) | k (k_heads x k_dim) | v (v_heads x v_dim)], the
// causal conv's output. g, beta: [rows, v_heads]. state: [v_heads, k_dim, v_dim] fp32, updated in
// place. out: [rows, v_heads, v_dim], not overlapping the inputs or state.
// InvalidArgument for rows < 0, a non-positive dim, or v_heads not a multiple of k_heads.
// Threads: value heads are independent, spread over ctx.pool; every sum runs in index order.
absl::Status GatedDeltaNet(const Context& ctx, const float* qkv, const float* g, const float* beta,
                           int64_t rows, const GatedDeltaNetDims& dims, float* state, float* out);

// The recurrence over a tree window (kernels/cpu/tree_rows.h): row r steps the state after its
// parent (the root steps `state`), so out[r] has the bits GatedDeltaNet gives the last row of its
// path's chain. `state` is only read: a tree has no one end state (a commit replays the kept
// path). InvalidArgument for the dims GatedDeltaNet refuses or bad parents. Threads: value heads
// over ctx.pool, each holding rows x k_dim x v_dim floats of per-row states.
absl::Status GatedDeltaNetTree(const Context& ctx, const float* qkv, const float* g,
                               const float* beta, const int32_t* parents, int64_t rows,
                               const GatedDeltaNetDims& dims, const float* state, float* out);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_GATED_DELTA_NET_H_
