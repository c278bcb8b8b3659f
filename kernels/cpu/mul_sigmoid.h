// x *= sigmoid(gate), elementwise: the output gate of Qwen3.5's gated attention (HF
// `attn_output * torch.sigmoid(gate)`).
#ifndef TWINSPAN_KERNELS_CPU_MUL_SIGMOID_H_
#define TWINSPAN_KERNELS_CPU_MUL_SIGMOID_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

// For `rows` rows of `dim` values: x[r][i] = x[r][i] * (1 / (1 + exp(-gate[r][i]))) in fp32, row r
// of x at x + r * x_stride and of gate at gate + r * gate_stride. x and gate must not overlap.
// InvalidArgument for rows < 0, dim <= 0 or a stride below dim.
// Threads: rows are independent, spread over ctx.pool.
absl::Status MulSigmoid(const Context& ctx, float* x, int64_t x_stride, const float* gate,
                        int64_t gate_stride, int64_t rows, int64_t dim);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_MUL_SIGMOID_H_
