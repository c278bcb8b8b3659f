// Moving one 16 x 16 tile between a row-major matrix and trellis position order (the order the
// encoder takes and the trellis stores, exl3::kTensorCorePerm).
#ifndef TWINSPAN_COMMON_EXL3_QUANTIZE_TILES_H_
#define TWINSPAN_COMMON_EXL3_QUANTIZE_TILES_H_

#include <cstdint>

#include "common/exl3/tile_decode.h"

namespace twinspan::exl3::quantize {

// tile[p] = w[r * stride + c] with kTensorCorePerm[p] = r * 16 + c; w points at the tile's (0, 0).
inline void GatherTile(const float* w, int64_t stride, float* tile) {
  for (int p = 0; p < kTileWeights; ++p) {
    const int rc = kTensorCorePerm[p];
    tile[p] = w[(rc / kTileSize) * stride + rc % kTileSize];
  }
}

// The inverse of GatherTile.
inline void ScatterTile(const float* tile, float* w, int64_t stride) {
  for (int p = 0; p < kTileWeights; ++p) {
    const int rc = kTensorCorePerm[p];
    w[(rc / kTileSize) * stride + rc % kTileSize] = tile[p];
  }
}

}  // namespace twinspan::exl3::quantize

#endif  // TWINSPAN_COMMON_EXL3_QUANTIZE_TILES_H_
