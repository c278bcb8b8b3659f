#include "services/target/attention_block.h"

#include <cmath>

#include "common/status.h"
#include "kernels/cpu/attention.h"

namespace twinspan::target {

absl::StatusOr<AttentionBlockHandles> UploadAttentionBlock(backend::Backend& backend,
                                                           const AttentionBlockWeights& w) {
  AttentionBlockHandles h;
  ABSL_ASSIGN_OR_RETURN(h.q_proj, backend.UploadLinear(w.q_proj));
  ABSL_ASSIGN_OR_RETURN(h.k_proj, backend.UploadLinear(w.k_proj));
  ABSL_ASSIGN_OR_RETURN(h.v_proj, backend.UploadLinear(w.v_proj));
  ABSL_ASSIGN_OR_RETURN(h.o_proj, backend.UploadLinear(w.o_proj));
  ABSL_ASSIGN_OR_RETURN(h.q_norm, backend.UploadFloats(w.q_norm));
  ABSL_ASSIGN_OR_RETURN(h.k_norm, backend.UploadFloats(w.k_norm));
  return h;
}

absl::Status AttentionBlockForward(backend::Backend& be, const AttentionBlockShape& shape,
                                   const AttentionBlockHandles& w, const float* x,
                                   const LayerRows& rows, absl::Span<LayerState* const> states,
                                   float* out) {
  const int64_t n = rows.rows, d = shape.head_dim, heads = shape.num_heads;
  const int64_t q_width = heads * d, kv_width = shape.num_kv_heads * d;
  const int64_t q_proj_width = shape.output_gate ? 2 * q_width : q_width;
  ABSL_ASSIGN_OR_RETURN(auto q_proj, be.AllocateFloats(n * q_proj_width));  // [n, (q | gate)]
  ABSL_ASSIGN_OR_RETURN(auto k, be.AllocateFloats(n * kv_width));
  ABSL_ASSIGN_OR_RETURN(auto v, be.AllocateFloats(n * kv_width));
  ABSL_ASSIGN_OR_RETURN(auto attn, be.AllocateFloats(n * q_width));
  const backend::LinearOutput qkv[] = {{w.q_proj.get(), q_proj->floats(), q_proj_width},
                                       {w.k_proj.get(), k->floats(), kv_width},
                                       {w.v_proj.get(), v->floats(), kv_width}};
  ABSL_RETURN_IF_ERROR(be.Linears(x, shape.hidden, n, qkv));
  float* q = q_proj->floats();
  std::unique_ptr<backend::Buffer> q_only;
  if (shape.output_gate) {  // Per head [query (d), gate (d)]: gather the queries, [n * heads, d].
    ABSL_ASSIGN_OR_RETURN(q_only, be.AllocateFloats(n * q_width));
    q = q_only->floats();
    ABSL_RETURN_IF_ERROR(be.Copy2D(q, d * sizeof(float), q_proj->floats(), 2 * d * sizeof(float),
                                   d * sizeof(float), n * heads));
  }
  ABSL_RETURN_IF_ERROR(be.RmsNorm(q, d, n * heads, d, w.q_norm->floats(), shape.eps, q, d));
  ABSL_RETURN_IF_ERROR(be.RmsNorm(k->floats(), d, n * shape.num_kv_heads, d, w.k_norm->floats(),
                                  shape.eps, k->floats(), d));
  ABSL_RETURN_IF_ERROR(
      be.Rope(q, q_width, n, heads, d, shape.rotary_dim, rows.rope_cos, rows.rope_sin));
  ABSL_RETURN_IF_ERROR(be.Rope(k->floats(), kv_width, n, shape.num_kv_heads, d, shape.rotary_dim,
                               rows.rope_cos, rows.rope_sin));
  const cpu::AttentionShape attention{.num_heads = heads,
                                      .num_kv_heads = shape.num_kv_heads,
                                      .head_dim = d,
                                      .scale = 1.0f / std::sqrt(static_cast<float>(d)),
                                      .mask = cpu::AttentionMask::kCausal};
  for (size_t s = 0; s < rows.segments.size(); ++s) {  // Each sequence over its own cache.
    const RowSegment& seg = rows.segments[s];
    backend::KvCacheHandle& kv = *states[s]->kv;
    const int64_t r0 = seg.first_row;
    ABSL_RETURN_IF_ERROR(be.KvWrite(kv, seg.slots, k->floats() + r0 * kv_width, kv_width,
                                    v->floats() + r0 * kv_width, kv_width));
    ABSL_RETURN_IF_ERROR(
        seg.parents.empty()
            ? be.Attention(attention, q + r0 * q_width, q_width, seg.positions, kv,
                           seg.positions.back() + 1, attn->floats() + r0 * q_width, q_width)
            : be.TreeAttention(attention, q + r0 * q_width, q_width, seg.parents, seg.first_slot,
                               kv, attn->floats() + r0 * q_width, q_width));
  }
  if (shape.output_gate) {  // attn *= sigmoid(gate), per head of d values.
    ABSL_RETURN_IF_ERROR(
        be.MulSigmoid(attn->floats(), d, q_proj->floats() + d, 2 * d, n * heads, d));
  }
  return be.Linear(attn->floats(), q_width, n, *w.o_proj, out, shape.hidden);
}

}  // namespace twinspan::target
