#include "common/exl3/quantize/tile_encoder.h"

#include "kernels/cpu/trellis_encode.h"

namespace twinspan::exl3::quantize {

absl::Status CpuTileEncoder::Encode(const TileCode& code, const float* tiles, int64_t num_tiles,
                                    uint16_t* states, float* values) const {
  const cpu::Context ctx{pool_};
  return cpu::TrellisEncode(ctx, tiles, num_tiles, {code.bits, code.codebook}, states, values);
}

}  // namespace twinspan::exl3::quantize
