// How the rows of one forward are laid out for a layer: every activation is [rows, width] with the
// rows of each sequence of the forward back to back (one segment per sequence, in order). Per-row
// ops (norms, linears, the MLP) run on all rows at once; what reads a sequence's own state (KV
// writes and attention, the conv and the DeltaNet recurrence) runs per segment.
#ifndef TWINSPAN_SERVICES_TARGET_LAYER_ROWS_H_
#define TWINSPAN_SERVICES_TARGET_LAYER_ROWS_H_

#include <cstdint>

#include "absl/types/span.h"

namespace twinspan::target {

// One sequence's rows: rows [first_row, first_row + rows) of every activation of the forward.
struct RowSegment {
  int64_t first_row = 0;
  int64_t rows = 0;
  // Host memory, [rows]: absolute positions; a chain's are ascending and contiguous from
  // first_slot, a tree's are first_slot + depth.
  absl::Span<const int64_t> positions;
  // Host memory, [rows]: where each row's K/V go, first_slot + r (a chain's are its positions).
  absl::Span<const int64_t> slots;
  int64_t first_slot = 0;  // The sequence's committed length.
  // Host memory: empty for a chain, else each row's parent (kernels/cpu/tree_rows.h).
  absl::Span<const int32_t> parents;
};

struct LayerRows {
  int64_t rows = 0;                 // Of all segments together.
  const float* rope_cos = nullptr;  // Backend memory, [rows, rotary_dim / 2], from each row's
  const float* rope_sin = nullptr;  // own position (cpu::RopeAngles).
  absl::Span<const RowSegment> segments;
};

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_LAYER_ROWS_H_
