// The drafter's intermediates in backend memory, allocated once per model for kScratchRows rows:
// tap rows, the fused context and its K/V on the way into the caches, and every step of a block.
#ifndef TWINSPAN_SERVICES_DRAFTER_DRAFTER_SCRATCH_H_
#define TWINSPAN_SERVICES_DRAFTER_DRAFTER_SCRATCH_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "common/config/drafter_config.h"
#include "kernels/backend/backend.h"
#include "services/drafter/drafter_device_weights.h"

namespace twinspan::drafter {

// Rows a block may have and context rows appended per step (longer appends go in steps: every op
// is row-invariant, so the cut changes no bit). 64 x the 27B's 25,600 raw tap floats is 6.5 MB.
inline constexpr int64_t kScratchRows = 64;

// Each buffer holds kScratchRows rows of the named width. Used under the model's backend lock.
struct DrafterScratch {
  BufferPtr raw;        // [rows, n_f * H] tap rows as they arrive
  BufferPtr fused;      // [rows, H] context rows
  BufferPtr k, v;       // [rows, nKV * D]
  BufferPtr cos, sin;   // [rows, D / 2]
  BufferPtr state;      // [rows, H] the block's residual stream
  BufferPtr x, y, out;  // [rows, H] normed input, conv-mixed input, sublayer output
  BufferPtr q, attn;    // [rows, nH * D]
  BufferPtr gate, up;   // [rows, I]
  BufferPtr dynamic;    // [rows, 2 * Kc * G] the dynamic conv's per-row kernels
  BufferPtr hidden;     // [rows, H] the final-normed block

  // ResourceExhausted naming the bytes when the backend cannot hold them.
  static absl::StatusOr<DrafterScratch> Allocate(backend::Backend& backend,
                                                 const DrafterConfig& config);
};

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_DRAFTER_DRAFTER_SCRATCH_H_
