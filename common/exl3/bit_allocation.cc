#include "common/exl3/bit_allocation.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_format.h"

namespace twinspan::exl3 {

absl::StatusOr<std::vector<int>> AllocateBits(const std::vector<QuantGroup>& groups,
                                              int64_t num_layers, double bits) {
  if (!(bits >= 1.0 && bits <= 8.0)) {
    return absl::InvalidArgumentError(absl::StrFormat("--bits %g is outside [1, 8]", bits));
  }
  double total = 0;
  for (const QuantGroup& g : groups) {
    if (g.numel <= 0 || g.layer < 0 || g.layer >= num_layers) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "bit allocation: a group of %d weights in layer %d of %d", g.numel, g.layer, num_layers));
    }
    total += static_cast<double>(g.numel);
  }
  const int base = static_cast<int>(std::floor(bits));
  std::vector<int> k(groups.size(), base);
  // Visit layers nearest either end first, then by layer, then in the layer's own order.
  std::vector<size_t> order(groups.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int64_t la = groups[a].layer, lb = groups[b].layer;
    const int64_t ea = std::min(la, num_layers - 1 - la), eb = std::min(lb, num_layers - 1 - lb);
    return ea != eb ? ea < eb : la < lb;
  });
  const double budget = bits * total;
  double used = base * total;
  for (bool raised = true; raised;) {
    raised = false;
    for (const size_t i : order) {
      if (k[i] < 8 && used + static_cast<double>(groups[i].numel) <= budget) {
        ++k[i];
        used += static_cast<double>(groups[i].numel);
        raised = true;
      }
    }
  }
  return k;
}

double AverageBits(const std::vector<QuantGroup>& groups, const std::vector<int>& k) {
  double weighted = 0, total = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    weighted += static_cast<double>(groups[i].numel) * k[i];
    total += static_cast<double>(groups[i].numel);
  }
  return total > 0 ? weighted / total : 0.0;
}

}  // namespace twinspan::exl3
