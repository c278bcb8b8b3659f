// A fast stand-in TileEncoder for tests of what surrounds the encoder (file layout, loading, error
// paths): each code is the best of its 2^K successors, greedily, and the states are read back from
// the packed codes, so the ring is always consistent. Far worse than the Viterbi; never shipped.
#ifndef TWINSPAN_TESTS_UNIT_QUANTIZE_GREEDY_TILE_ENCODER_H_
#define TWINSPAN_TESTS_UNIT_QUANTIZE_GREEDY_TILE_ENCODER_H_

#include <cstddef>
#include <vector>

#include "common/exl3/codebook.h"
#include "common/exl3/quantize/tile_encoder.h"
#include "common/exl3/tile_decode.h"
#include "common/exl3/tile_pack.h"
#include "common/safetensors/half.h"

namespace twinspan::quantize::testing {

class GreedyTileEncoder final : public exl3::quantize::TileEncoder {
 public:
  std::string name() const override { return "greedy (test)"; }

  absl::Status Encode(const exl3::quantize::TileCode& code, const float* tiles, int64_t num_tiles,
                      uint16_t* states, float* values) const override {
    const int k = code.bits;
    for (int64_t t = 0; t < num_tiles; ++t) {
      const float* x = tiles + t * 256;
      uint16_t chosen[256];
      uint32_t state = 0;
      for (int p = 0; p < 256; ++p) {
        float best = 1e30f;
        uint32_t pick = 0;
        for (uint32_t c = 0; c < (1u << k); ++c) {
          const uint32_t s = ((state << k) | c) & 0xffff;
          const float d = HalfToFloat(exl3::CodebookHalf(code.codebook, s)) - x[p];
          if (d * d < best) {
            best = d * d;
            pick = s;
          }
        }
        state = pick;
        chosen[p] = static_cast<uint16_t>(pick);
      }
      std::vector<uint16_t> words(16 * k);
      exl3::PackTile(chosen, k, words.data());
      exl3::TileStates(reinterpret_cast<const std::byte*>(words.data()), k, states + t * 256);
      for (int p = 0; p < 256; ++p) {
        values[t * 256 + p] = HalfToFloat(exl3::CodebookHalf(code.codebook, states[t * 256 + p]));
      }
    }
    return absl::OkStatus();
  }
};

}  // namespace twinspan::quantize::testing

#endif  // TWINSPAN_TESTS_UNIT_QUANTIZE_GREEDY_TILE_ENCODER_H_
