// The write side of tile_decode.h: one tile's 256 trellis states packed into its 16 * K int16
// words (exl3-format.md sections 2.2 and 5.6; exllamav3's pack.cu layout).
#ifndef TWINSPAN_COMMON_EXL3_TILE_PACK_H_
#define TWINSPAN_COMMON_EXL3_TILE_PACK_H_

#include <cstdint>

#include "common/exl3/format.h"

namespace twinspan::exl3 {

// Writes the low K bits of each state (the code c_p) MSB-first in position order as 8 * K
// little-endian 32-bit words, i.e. 16 * K int16 at `tile` (any alignment). When the states form a
// tail-biting ring (state[p] >> K == state[p - 1] & (2^(16-K) - 1), p mod 256), TileStates of the
// result gives them back; any tile's own TileStates packs back to the same words.
// REQUIRES: 1 <= bits <= 8.
void PackTile(const uint16_t states[kTileWeights], int bits, uint16_t* tile);

}  // namespace twinspan::exl3

#endif  // TWINSPAN_COMMON_EXL3_TILE_PACK_H_
