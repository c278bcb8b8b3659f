// Depthwise causal 1-D convolution with SiLU, the short conv in front of Gated DeltaNet.
#ifndef TWINSPAN_KERNELS_CPU_CAUSAL_CONV1D_H_
#define TWINSPAN_KERNELS_CPU_CAUSAL_CONV1D_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

// Runs `rows` consecutive tokens one at a time, exactly as decoding does, so a window of k rows
// gives the same bits as k calls of one row:
//   y[t, c] = silu(sum_{j < kernel} weight[c, j] * in[t - kernel + 1 + j, c]), summed in j order,
// where in[] is conv_state followed by x.
// x: [rows, channels]. weight: [channels, kernel] (HF conv1d.weight [C, 1, K] with the 1 dropped).
// conv_state: [kernel - 1, channels], the previous kernel - 1 inputs, oldest first; on return it
// holds the last kernel - 1 inputs. y: [rows, channels], not overlapping x or conv_state.
// InvalidArgument for rows < 0, channels <= 0 or kernel < 1.
// Threads: channels are independent, spread over ctx.pool; results do not depend on the split.
absl::Status CausalConv1d(const Context& ctx, const float* x, int64_t rows, int64_t channels,
                          const float* weight, int64_t kernel, float* conv_state, float* y);

// The conv of a tree window (kernels/cpu/tree_rows.h): row r's inputs are conv_state's rows, then
// x's rows along its path, so y[r] has the bits CausalConv1d gives the last row of that path's
// chain. conv_state is only read: a tree has no one end window (a commit replays the kept path).
// InvalidArgument for the shapes CausalConv1d refuses or bad parents.
absl::Status CausalConv1dTree(const Context& ctx, const float* x, const int32_t* parents,
                              int64_t rows, int64_t channels, const float* weight, int64_t kernel,
                              const float* conv_state, float* y);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_CAUSAL_CONV1D_H_
