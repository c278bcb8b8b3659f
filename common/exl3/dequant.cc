#include "common/exl3/dequant.h"

#include "common/exl3/hadamard.h"
#include "common/exl3/tile_decode.h"

namespace twinspan::exl3 {

std::vector<float> DecodeRotated(const Weight& weight) {
  const int64_t k = weight.k(), n = weight.n();
  std::vector<float> w_hat(static_cast<size_t>(k * n));
  for (int64_t tk = 0; tk < k / kTileSize; ++tk) {
    for (int64_t tn = 0; tn < n / kTileSize; ++tn) {
      DecodeTile(weight.tile(tk, tn), weight.bits(), weight.codebook(),
                 w_hat.data() + tk * kTileSize * n + tn * kTileSize, n);
    }
  }
  return w_hat;
}

std::vector<float> DequantizeDense(const Weight& weight) {
  const int64_t k = weight.k(), n = weight.n();
  std::vector<float> w = DecodeRotated(weight);
  float block[kHadamardSize];
  for (int64_t col = 0; col < n; ++col) {
    for (int64_t row0 = 0; row0 < k; row0 += kHadamardSize) {
      for (int i = 0; i < kHadamardSize; ++i) block[i] = w[(row0 + i) * n + col];
      Hadamard128(block);
      for (int i = 0; i < kHadamardSize; ++i) w[(row0 + i) * n + col] = block[i];
    }
  }
  const auto suh = weight.suh();
  const auto svh = weight.svh();
  for (int64_t row = 0; row < k; ++row) {
    float* r = w.data() + row * n;
    for (int64_t col0 = 0; col0 < n; col0 += kHadamardSize) Hadamard128(r + col0);
    for (int64_t col = 0; col < n; ++col) r[col] = r[col] * suh[row] * svh[col];
  }
  return w;
}

}  // namespace twinspan::exl3
