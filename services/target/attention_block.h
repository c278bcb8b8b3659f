// The softmax-attention sublayer shared by the families: Qwen3's (q/k norm, full RoPE) and
// Qwen3.5's gated variant (q_proj also yields a sigmoid output gate, partial rotary, (1 + w) norms
// passed in already offset).
#ifndef TWINSPAN_SERVICES_TARGET_ATTENTION_BLOCK_H_
#define TWINSPAN_SERVICES_TARGET_ATTENTION_BLOCK_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/backend/backend.h"
#include "kernels/cpu/linear.h"
#include "services/target/layer_rows.h"
#include "services/target/sequence_state.h"

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

// As loaded (host memory).
struct AttentionBlockWeights {
  cpu::LinearWeight q_proj;   // [heads * head_dim (x2 with output_gate), hidden]
  cpu::LinearWeight k_proj;   // [kv_heads * head_dim, hidden]
  cpu::LinearWeight v_proj;   // [kv_heads * head_dim, hidden]
  cpu::LinearWeight o_proj;   // [hidden, heads * head_dim]
  std::vector<float> q_norm;  // [head_dim], effective weights (1 + w already applied if needed).
  std::vector<float> k_norm;  // [head_dim]
};

// The same weights in a backend's memory.
struct AttentionBlockHandles {
  std::unique_ptr<backend::LinearHandle> q_proj, k_proj, v_proj, o_proj;
  std::unique_ptr<backend::Buffer> q_norm, k_norm;
};

// Backend errors (ResourceExhausted).
absl::StatusOr<AttentionBlockHandles> UploadAttentionBlock(backend::Backend& backend,
                                                           const AttentionBlockWeights& weights);

// out[rows, hidden] = attention of the normed input x[rows, hidden]: for each segment s, its rows'
// K/V are written into states[s]->kv at the segment's slots, then its rows attend over that cache
// (a tree's each over the committed rows and its ancestors). x and out are backend memory. Errors
// from the ops (InvalidArgument, OutOfRange for a position past a cache).
absl::Status AttentionBlockForward(backend::Backend& backend, const AttentionBlockShape& shape,
                                   const AttentionBlockHandles& weights, const float* x,
                                   const LayerRows& rows, absl::Span<LayerState* const> states,
                                   float* out);

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_ATTENTION_BLOCK_H_
