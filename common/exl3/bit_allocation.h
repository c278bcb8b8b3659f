// Per-tensor EXL3 bits for a fractional average (3.5 bits = a mix of K = 3 and 4), in the manner of
// exllamav3's allocation: every group starts at floor(bits), then whole groups are raised by one
// bit, layers nearest either end of the stack first, while the total stays within bits x weights
// (exl3-format.md section 1.4). Shared by twinspan-synth and twinspan-quantize.
#ifndef TWINSPAN_COMMON_EXL3_BIT_ALLOCATION_H_
#define TWINSPAN_COMMON_EXL3_BIT_ALLOCATION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace twinspan::exl3 {

// Linears that share one K (q/k/v, gate/up, ...), in their layer.
struct QuantGroup {
  int64_t layer = 0;
  int64_t numel = 0;  // Weights of all its linears.
};

// K (1..8) per group, in the order given. InvalidArgument unless 1 <= bits <= 8 and every group
// has weights and a layer in [0, num_layers).
absl::StatusOr<std::vector<int>> AllocateBits(const std::vector<QuantGroup>& groups,
                                              int64_t num_layers, double bits);

// The average K over the groups' weights.
double AverageBits(const std::vector<QuantGroup>& groups, const std::vector<int>& k);

}  // namespace twinspan::exl3

#endif  // TWINSPAN_COMMON_EXL3_BIT_ALLOCATION_H_
