// The one interface the quantizer encodes tiles through, so a device encoder can replace the CPU's
// (kernels/cpu/trellis_encode.h) without touching LDLQ or the scale search.
#ifndef TWINSPAN_COMMON_EXL3_QUANTIZE_TILE_ENCODER_H_
#define TWINSPAN_COMMON_EXL3_QUANTIZE_TILE_ENCODER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "common/exl3/format.h"
#include "kernels/cpu/parallel.h"

namespace twinspan::exl3::quantize {

// What a tile is encoded as: K bits per weight under one codebook.
struct TileCode {
  int bits = 4;
  Codebook codebook = Codebook::kMul1;
};

// Implementations are immutable after construction; Encode may be called from one thread at a
// time (the CPU encoder's pool serializes its work).
class TileEncoder {
 public:
  virtual ~TileEncoder() = default;

  // "cpu", "cuda:0": for progress lines.
  virtual std::string name() const = 0;

  // tiles [num_tiles, 256], each in trellis position order (exl3::kTensorCorePerm) -> the
  // tail-biting states [num_tiles, 256] that fit it best and their codebook values
  // [num_tiles, 256]. Deterministic: a tile's result never depends on the batch around it.
  // InvalidArgument for bits outside 1..8 or null buffers; device errors.
  virtual absl::Status Encode(const TileCode& code, const float* tiles, int64_t num_tiles,
                              uint16_t* states, float* values) const = 0;
};

// The CPU's tail-biting Viterbi (cpu::TrellisEncode) over `pool` (not owned; null runs inline).
class CpuTileEncoder final : public TileEncoder {
 public:
  explicit CpuTileEncoder(cpu::ThreadPool* pool) : pool_(pool) {}

  std::string name() const override { return "cpu"; }
  absl::Status Encode(const TileCode& code, const float* tiles, int64_t num_tiles, uint16_t* states,
                      float* values) const override;

 private:
  cpu::ThreadPool* pool_;
};

}  // namespace twinspan::exl3::quantize

#endif  // TWINSPAN_COMMON_EXL3_QUANTIZE_TILE_ENCODER_H_
