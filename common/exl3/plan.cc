#include "common/exl3/plan.h"

#include "common/exl3/format.h"

namespace twinspan::exl3 {

Plan plan(int64_t k, int64_t n, int blocks, int min_tiles) {
  const int64_t kt = k / kTileSize;
  const int64_t nb = n / kHadamardSize;
  Plan p;
  if (nb >= kWideBlocks) {
    p = {1, 8};
  } else {
    p = {1, 4};
    while (nb * p.k_splits < blocks && p.k_splits < 64) p.k_splits *= 2;
  }
  auto groups = [&] { return static_cast<int64_t>(p.k_splits) * p.warps; };
  while (kt % groups() != 0 || kt / groups() < min_tiles) {
    if (p.warps > 4) {
      p.warps = 4;
    } else if (p.k_splits > 1) {
      p.k_splits /= 2;
    } else {
      break;
    }
  }
  return p;
}

}  // namespace twinspan::exl3
