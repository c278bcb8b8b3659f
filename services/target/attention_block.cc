#include "services/target/attention_block.h"

#include <cmath>
#include <cstring>

#include "common/status.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"

namespace twinspan::target {

absl::Status AttentionBlockForward(const cpu::Context& ctx, const AttentionBlockShape& shape,
                                   const AttentionBlockWeights& weights, const float* x,
                                   int64_t rows, const int64_t* positions, const float* cos,
                                   const float* sin, cpu::KvCache& kv, float* out) {
  const int64_t d = shape.head_dim;
  const int64_t q_width = shape.num_heads * d;
  const int64_t kv_width = shape.num_kv_heads * d;
  const int64_t q_proj_width = shape.output_gate ? 2 * q_width : q_width;
  std::vector<float> q_proj(rows * q_proj_width), q(rows * q_width), k(rows * kv_width),
      v(rows * kv_width), attn(rows * q_width);
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx, x, rows, weights.q_proj, q_proj.data()));
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx, x, rows, weights.k_proj, k.data()));
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx, x, rows, weights.v_proj, v.data()));
  if (shape.output_gate) {  // Per head: [query (d), gate (d)].
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t h = 0; h < shape.num_heads; ++h) {
        std::memcpy(&q[r * q_width + h * d], &q_proj[r * q_proj_width + h * 2 * d],
                    d * sizeof(float));
      }
    }
  } else {
    q.swap(q_proj);
  }
  ABSL_RETURN_IF_ERROR(cpu::RmsNorm(ctx, q.data(), rows * shape.num_heads, d, weights.q_norm.data(),
                                    shape.eps, q.data()));
  ABSL_RETURN_IF_ERROR(cpu::RmsNorm(ctx, k.data(), rows * shape.num_kv_heads, d,
                                    weights.k_norm.data(), shape.eps, k.data()));
  ABSL_RETURN_IF_ERROR(
      cpu::Rope(ctx, q.data(), q_width, rows, shape.num_heads, d, shape.rotary_dim, cos, sin));
  ABSL_RETURN_IF_ERROR(
      cpu::Rope(ctx, k.data(), kv_width, rows, shape.num_kv_heads, d, shape.rotary_dim, cos, sin));
  for (int64_t r = 0; r < rows; ++r) {
    ABSL_RETURN_IF_ERROR(kv.Write(positions[r], &k[r * kv_width], &v[r * kv_width]));
  }
  cpu::AttentionShape attention_shape;
  attention_shape.num_heads = shape.num_heads;
  attention_shape.num_kv_heads = shape.num_kv_heads;
  attention_shape.head_dim = d;
  attention_shape.scale = 1.0f / std::sqrt(static_cast<float>(d));
  attention_shape.mask = cpu::AttentionMask::kCausal;
  ABSL_RETURN_IF_ERROR(cpu::Attention(ctx, attention_shape, q.data(), q_width, positions, rows, kv,
                                      positions[rows - 1] + 1, attn.data(), q_width));
  if (shape.output_gate) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t h = 0; h < shape.num_heads; ++h) {
        const float* gate = &q_proj[r * q_proj_width + h * 2 * d + d];
        float* a = &attn[r * q_width + h * d];
        for (int64_t i = 0; i < d; ++i) a[i] = a[i] * (1.0f / (1.0f + std::exp(-gate[i])));
      }
    }
  }
  return cpu::Linear(ctx, attn.data(), rows, weights.o_proj, out);
}

}  // namespace twinspan::target
