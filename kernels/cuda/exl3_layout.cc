#include "kernels/cuda/exl3_layout.h"

namespace twinspan::cuda {
namespace {

// Stream byte `b` of a tile (bits 8b .. 8b + 7, MSB first): stream words are little-endian
// uint32s whose most significant byte comes first.
uint32_t StreamByte(const uint8_t* tile, int b) { return tile[(b & ~3) + 3 - (b & 3)]; }

}  // namespace

void ToExl3DeviceLayout(const void* src, int64_t src_row_tiles, int64_t k, int64_t n, int bits,
                        uint32_t* dst) {
  const int64_t kt = k / 16, blocks = n / 128;
  const int vw = Exl3VectorWords(bits);
  const int64_t tile_bytes = 32 * bits;
  const auto* bytes = static_cast<const uint8_t*>(src);
  for (int64_t b = 0; b < blocks; ++b)
    for (int h = 0; h < 2; ++h)
      for (int64_t tk = 0; tk < kt; ++tk) {
        uint32_t* strip = dst + ((b * 2 + h) * kt + tk) * 32 * bits;
        const uint8_t* row = bytes + tk * src_row_tiles * tile_bytes;
        for (int lane = 0; lane < 32; ++lane) {
          // The lane's 4K bytes: K stream bytes of each of its 4 tiles, from byte lane * K.
          uint32_t words[8] = {};
          for (int t = 0; t < 4; ++t) {
            const uint8_t* tile = row + (b * 8 + h * 4 + t) * tile_bytes;
            for (int i = 0; i < bits; ++i) {
              const int at = t * bits + i;  // Byte index in the lane's string.
              words[at / 4] |= StreamByte(tile, lane * bits + i) << (24 - 8 * (at % 4));
            }
          }
          for (int w = 0; w < bits; ++w) strip[(w / vw * 32 + lane) * vw + w % vw] = words[w];
        }
      }
}

}  // namespace twinspan::cuda
