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

// Validates and launches: the parts side by side in one launch per 64 rows where their schedules
// fit so (Context::exl3_separate unset), else one after another. `op` names the public entry in
// error messages.
absl::Status Run(const char* op, const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                 const Part* parts, int count);

}  // namespace twinspan::cuda::exl3_run

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_LINEAR_RUN_CUH_
