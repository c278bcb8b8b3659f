#include "services/draft_link/fuse_tap_rows.h"

#include <algorithm>

#include "common/status.h"

namespace twinspan::engine {

absl::Status FuseTapRows(backend::Backend& backend, const TapFusionWeights& weights,
                         const float* raw, int64_t rows, float* fused) {
  const int64_t h = weights.hidden;
  ABSL_RETURN_IF_ERROR(backend.Linear(raw, weights.raw_width, rows, *weights.fc, fused, h));
  return backend.RmsNorm(fused, h, rows, h, weights.hidden_norm, weights.eps, fused, h);
}

absl::Status FuseHostTapRows(backend::Backend& backend, const TapFusionWeights& weights,
                             const float* raw, int64_t rows, float* fused,
                             backend::Buffer& raw_stage, backend::Buffer& fused_stage,
                             int64_t stage_rows) {
  const int64_t width = weights.raw_width, h = weights.hidden;
  for (int64_t r0 = 0; r0 < rows; r0 += stage_rows) {
    const int64_t n = std::min(stage_rows, rows - r0);
    ABSL_RETURN_IF_ERROR(backend.Upload(raw_stage, 0, raw + r0 * width, n * width * sizeof(float)));
    ABSL_RETURN_IF_ERROR(
        FuseTapRows(backend, weights, raw_stage.floats(), n, fused_stage.floats()));
    ABSL_RETURN_IF_ERROR(backend.Download(fused + r0 * h, fused_stage, 0, n * h * sizeof(float)));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::engine
