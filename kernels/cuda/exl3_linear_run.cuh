// Host side shared by Exl3Linear and Exl3SpanLinear: validation, the launch schedule, the
// workspace layout and the launches. Internal to kernels/cuda.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_RUN_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_RUN_CUH_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/exl3_linear.cuh"

namespace twinspan::cuda::exl3_run {

// One output range of a launch: the view whose columns [keep_begin, keep_end) go to output
// columns out_col, out_col + 1, ... of every row.
struct Output {
  const Exl3DeviceWeight* view = nullptr;
  int64_t keep_begin = 0, keep_end = 0, out_col = 0;
};

// One matrix of a launch: `count` output ranges of views of it, into rows of y (stride y_stride).
struct Part {
  const Output* outs = nullptr;
  int count = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
};

// Workspace bytes for the parts (matrices of one k, K and codebook) at up to `rows` rows.
size_t WorkspaceBytes(const Part* parts, int count, int64_t rows);

// The prompt path (exl3_prompt.cu): bytes of workspace past `offset` (where the decode kernel's
// counters end) for the parts at up to `rows` rows under Context::exl3_schedule `schedule`.
size_t PromptWorkspaceBytes(const Part* parts, int count, int64_t rows, size_t offset,
                            int schedule = 0);

// Whether the device holds the prompt kernel's blocks for these parts (their shared memory).
bool PromptFits(const Part* parts, int count, int device);

// Runs already validated parts on the prompt path: per launch of up to 4,096 rows each part's rows
// rotated once, then one PromptKernel or PromptWgmmaKernel launch (Context::exl3_prompt_tile).
// ResourceExhausted for a small workspace or a forced wide tile the device cannot hold.
absl::Status RunPrompt(const char* op, const Context& ctx, const float* x, int64_t x_stride,
                       int64_t rows, const Part* parts, int count, int device, size_t offset);

// Validates and launches: the parts side by side in one launch per 64 rows where their schedules
// fit so (Context::exl3_separate unset), else one after another. `op` names the public entry in
// error messages.
absl::Status Run(const char* op, const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                 const Part* parts, int count);

}  // namespace twinspan::cuda::exl3_run

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_RUN_CUH_
