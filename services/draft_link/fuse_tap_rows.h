// The DFlash fc + hidden_norm step on tap rows, written once: the drafter runs it on raw rows
// before it appends them to a stream's context (DrafterModel), the target before it sends fused
// rows (TapFuser). Both issue the same ops in the same order, so on the CPU backend a split run's
// context is bit for bit an in-process run's.
#ifndef TWINSPAN_SERVICES_DRAFT_LINK_FUSE_TAP_ROWS_H_
#define TWINSPAN_SERVICES_DRAFT_LINK_FUSE_TAP_ROWS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/backend/backend.h"

namespace twinspan::engine {

// A drafter's fc and hidden_norm as uploaded to a backend; nothing owned.
struct TapFusionWeights {
  const backend::LinearHandle* fc = nullptr;  // [hidden, raw_width]
  const float* hidden_norm = nullptr;         // [hidden], in the backend's memory
  float eps = 0;                              // the drafter's rms_norm_eps
  int64_t raw_width = 0;                      // floats per raw row: n_taps * hidden
  int64_t hidden = 0;                         // floats per fused row
};

// fused[rows, hidden] = hidden_norm(fc(raw[rows, raw_width])): Linear, then RmsNorm in place, both
// issued on `backend` over its memory (rows contiguous). REQUIRES: rows >= 1; nothing else issues
// ops on `backend` meanwhile. Errors: the ops'.
absl::Status FuseTapRows(backend::Backend& backend, const TapFusionWeights& weights,
                         const float* raw, int64_t rows, float* fused);

// The same for host rows: `stage_rows` at a time uploaded to `raw_stage`, fused into `fused_stage`
// and downloaded. REQUIRES: rows >= 0; stage_rows >= 1 and both stages hold that many rows; as
// FuseTapRows. Errors: the uploads', the ops', the downloads'.
absl::Status FuseHostTapRows(backend::Backend& backend, const TapFusionWeights& weights,
                             const float* raw, int64_t rows, float* fused,
                             backend::Buffer& raw_stage, backend::Buffer& fused_stage,
                             int64_t stage_rows);

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_DRAFT_LINK_FUSE_TAP_ROWS_H_
