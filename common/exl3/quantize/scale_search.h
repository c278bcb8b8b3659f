// The global scale g of a regularized weight: the factor that minimizes the encoder's mean squared
// error over a sample of its tiles, quantize(tile * g) / g against the tile (exl3-format.md 5.3).
#ifndef TWINSPAN_COMMON_EXL3_QUANTIZE_SCALE_SEARCH_H_
#define TWINSPAN_COMMON_EXL3_QUANTIZE_SCALE_SEARCH_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/exl3/quantize/tile_encoder.h"

namespace twinspan::exl3::quantize {

// The sampled tiles of w [k, n], each in position order, [count, 256]: a wrapped diagonal three
// tiles wide (every tile row and column is hit, and outliers come in whole channels) followed by
// the max(8, diagonal / 16) tiles of highest and of lowest RMS (ties by tile index).
std::vector<float> SampleTiles(const float* w, int64_t k, int64_t n);

// Coarse grid 0.1, 0.3, ..., 1.9 on every third sampled tile, then five points 0.075 apart around
// the best on all of them, refined by the vertex of the parabola through the best and its
// neighbours (moved at most half a step); at least 0.01. The encoder's errors.
absl::StatusOr<float> SearchGlobalScale(const TileEncoder& encoder, const TileCode& code,
                                        const float* w, int64_t k, int64_t n);

}  // namespace twinspan::exl3::quantize

#endif  // TWINSPAN_COMMON_EXL3_QUANTIZE_SCALE_SEARCH_H_
