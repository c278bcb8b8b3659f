// The softmax-attention sublayer shared by the families: Qwen3's (q/k norm, full RoPE) and
// Qwen3.5's gated variant (q_proj also yields a sigmoid output gate, partial rotary, (1 + w) norms
// passed in already offset).
#ifndef TWINSPAN_SERVICES_TARGET_ATTENTION_BLOCK_H_
#define TWINSPAN_SERVICES_TARGET_ATTENTION_BLOCK_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/kv_cache.h"
#include "kernels/cpu/linear.h"

namespace twinspan::target {

struct AttentionBlockShape {
  int64_t hidden = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t rotary_dim = 0;    // First rotary_dim dims of each head rotate.
  float eps = 1e-6f;         // q_norm / k_norm epsilon.
  bool output_gate = false;  // q_proj gives [heads, 2 * head_dim]: query then gate per head.
};

struct AttentionBlockWeights {
  cpu::LinearWeight q_proj;   // [heads * head_dim (x2 with output_gate), hidden]
  cpu::LinearWeight k_proj;   // [kv_heads * head_dim, hidden]
  cpu::LinearWeight v_proj;   // [kv_heads * head_dim, hidden]
  cpu::LinearWeight o_proj;   // [hidden, heads * head_dim]
  std::vector<float> q_norm;  // [head_dim], effective weights (1 + w already applied if needed).
  std::vector<float> k_norm;  // [head_dim]
};

// out[rows, hidden] = attention of the normed input x[rows, hidden] at absolute `positions`
// (ascending, contiguous), after writing the rows' K/V into `kv` at those positions.
// cos/sin: [rows, rotary_dim / 2] from cpu::RopeAngles. Errors from the ops (InvalidArgument,
// OutOfRange for a position past the cache).
absl::Status AttentionBlockForward(const cpu::Context& ctx, const AttentionBlockShape& shape,
                                   const AttentionBlockWeights& weights, const float* x,
                                   int64_t rows, const int64_t* positions, const float* cos,
                                   const float* sin, cpu::KvCache& kv, float* out);

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_ATTENTION_BLOCK_H_
