#include "common/exl3/quantize/ldlq.h"

#include "absl/strings/str_format.h"
#include "common/exl3/format.h"
#include "common/exl3/quantize/dense.h"
#include "common/exl3/quantize/tiles.h"
#include "common/status.h"

namespace twinspan::exl3::quantize {

absl::StatusOr<LdlqResult> Ldlq(cpu::ThreadPool* pool, const TileEncoder& encoder,
                                const TileCode& code, const float* w, int64_t k, int64_t n,
                                std::span<const float> l) {
  if (k <= 0 || n <= 0 || k % kHadamardSize != 0 || n % kHadamardSize != 0 ||
      (!l.empty() && l.size() != static_cast<size_t>(k * k))) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "LDLQ of a [%d, %d] weight with an L of %d values (k and n multiples of 128, L k x k)", k,
        n, l.size()));
  }
  const int64_t tiles_n = n / kTileSize;
  LdlqResult out;
  out.quantized.assign(static_cast<size_t>(k * n), 0.0f);
  out.states.assign(static_cast<size_t>(k * n), 0);
  std::vector<float> error(static_cast<size_t>(k * n), 0.0f);  // w - q, rows done so far.
  std::vector<float> carried;  // [k, n]: rows above a span get the span's error through L.
  if (!l.empty()) carried.assign(static_cast<size_t>(k * n), 0.0f);
  std::vector<float> target(static_cast<size_t>(kTileSize * n));
  std::vector<float> tiles(target.size()), values(target.size());
  std::vector<uint16_t> states(target.size());
  for (int64_t span_end = k; span_end > 0; span_end -= kHadamardSize) {
    const int64_t span_begin = span_end - kHadamardSize;
    for (int64_t r1 = span_end; r1 > span_begin; r1 -= kTileSize) {
      const int64_t r0 = r1 - kTileSize;
      if (l.empty()) {
        std::copy(w + r0 * n, w + r1 * n, target.begin());
      } else {
        std::copy(carried.begin() + r0 * n, carried.begin() + r1 * n, target.begin());
        // The strips below it in this span, not yet folded into `carried`.
        GemmTN(pool, kTileSize, n, span_end - r1, l.data() + r1 * k + r0, k, error.data() + r1 * n,
               n, target.data(), n);
        for (int64_t i = 0; i < kTileSize * n; ++i) target[i] += w[r0 * n + i];
      }
      for (int64_t t = 0; t < tiles_n; ++t) {
        GatherTile(target.data() + t * kTileSize, n, tiles.data() + t * kTileWeights);
      }
      ABSL_RETURN_IF_ERROR(
          encoder.Encode(code, tiles.data(), tiles_n, states.data(), values.data()));
      float* q = out.quantized.data() + r0 * n;
      for (int64_t t = 0; t < tiles_n; ++t) {
        ScatterTile(values.data() + t * kTileWeights, q + t * kTileSize, n);
      }
      std::copy(states.begin(), states.end(), out.states.begin() + r0 * n);
      for (int64_t i = 0; i < kTileSize * n; ++i) error[r0 * n + i] = w[r0 * n + i] - q[i];
    }
    if (!l.empty() && span_begin > 0) {
      GemmTN(pool, span_begin, n, kHadamardSize, l.data() + span_begin * k, k,
             error.data() + span_begin * n, n, carried.data(), n);
    }
  }
  return out;
}

}  // namespace twinspan::exl3::quantize
