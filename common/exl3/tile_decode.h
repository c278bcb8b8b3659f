// One 16 x 16 tile from its packed trellis: bitstream -> 16-bit states -> codebook values, placed
// by the tensor-core permutation (exl3-format.md sections 2.2 and 2.4).
#ifndef TWINSPAN_COMMON_EXL3_TILE_DECODE_H_
#define TWINSPAN_COMMON_EXL3_TILE_DECODE_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "common/exl3/format.h"

namespace twinspan::exl3 {

// kTensorCorePerm[p] = r * 16 + c: the tile element trellis position p holds. Position p = 8t + j
// is mma lane t's j-th B-fragment half (m16n8k16).
inline constexpr std::array<uint8_t, kTileWeights> kTensorCorePerm = [] {
  std::array<uint8_t, kTileWeights> perm{};
  for (int p = 0; p < kTileWeights; ++p) {
    const int lane = p / 8, j = p % 8;
    const int r = 2 * (lane % 4) + (j & 1) + 8 * ((j >> 1) & 1);
    const int c = lane / 4 + 8 * (j >> 2);
    perm[p] = static_cast<uint8_t>(r * kTileSize + c);
  }
  return perm;
}();

// The 256 16-bit states of one tile. `tile` points at its 32*K bytes (16*K int16, little-endian;
// any alignment). REQUIRES: 1 <= bits <= 8.
void TileStates(const std::byte* tile, int bits, uint16_t states[kTileWeights]);

// Decodes one tile into `out` with row stride `out_stride` floats: out[r * out_stride + c] is the
// rotated weight at (k offset r, n offset c), an exact fp16 value. REQUIRES: 1 <= bits <= 8.
void DecodeTile(const std::byte* tile, int bits, Codebook codebook, float* out, int64_t out_stride);

}  // namespace twinspan::exl3

#endif  // TWINSPAN_COMMON_EXL3_TILE_DECODE_H_
