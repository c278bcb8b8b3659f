// Rotary position embedding, NeoX ("rotate half") layout as HF Qwen3 / Qwen3.5, with partial
// rotary: only the first `rot_dim` dims of each head rotate, the rest pass through.
// Qwen3.5's interleaved M-RoPE reduces to this for text, where all three position ids are equal.
#ifndef TWINSPAN_KERNELS_CPU_ROPE_H_
#define TWINSPAN_KERNELS_CPU_ROPE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

// cos/sin [rows, rot_dim / 2] for absolute `positions` [rows]: angle i of a row is
// fp32(position) * fp32(1 / theta^(2i / rot_dim)), as HF computes it in fp32.
// InvalidArgument for an odd or non-positive rot_dim, theta <= 0, or a negative position.
absl::Status RopeAngles(const int64_t* positions, int64_t rows, int64_t rot_dim, double theta,
                        float* cos, float* sin);

// Rotates x in place: row r holds `heads` heads of head_dim floats from x + r * x_stride; for
// i < rot_dim/2: (a, b) = (x[i], x[i + rot_dim/2]) -> (a cos - b sin, b cos + a sin).
// InvalidArgument when rot_dim is odd, not positive, or above head_dim, or x_stride is below
// heads * head_dim.
absl::Status Rope(const Context& ctx, float* x, int64_t x_stride, int64_t rows, int64_t heads,
                  int64_t head_dim, int64_t rot_dim, const float* cos, const float* sin);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_ROPE_H_
