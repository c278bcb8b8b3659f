#include "kernels/cpu/exl3_linear_steps.h"

#include <algorithm>
#include <cstring>

#include "common/exl3/format.h"
#include "common/exl3/hadamard.h"
#include "common/exl3/tile_decode.h"
#include "common/safetensors/half.h"
#include "kernels/cpu/dot.h"

namespace twinspan::cpu::exl3_steps {
namespace {

using exl3::kHadamardSize;
using exl3::kTileSize;
using exl3::kTilesPerBlock;
static_assert(kBlockColumns == kHadamardSize && kStripFloats == kTileSize * kHadamardSize);

// kRows rows x 4 * kVectors columns of partial in registers for the strip's 16 steps.
template <int kRows, int kVectors>
void AccumulateTile(const float* xh, int64_t xh_stride, const float* strip, const StripSums& out) {
  Float4 acc[kRows][kVectors];
#pragma GCC unroll 16
  for (int64_t m = 0; m < kRows; ++m) {
#pragma GCC unroll 16
    for (int64_t v = 0; v < kVectors; ++v) {
      acc[m][v] = out.first ? Float4{} : LoadFloat4(out.sums + m * kBlockColumns + 4 * v);
    }
  }
  for (int64_t r = 0; r < kTileSize; ++r) {
    Float4 w[kVectors] = {};
#pragma GCC unroll 16
    for (int64_t v = 0; v < kVectors; ++v) w[v] = LoadFloat4(strip + r * kBlockColumns + 4 * v);
#pragma GCC unroll 16
    for (int64_t m = 0; m < kRows; ++m) {
      const float a = xh[m * xh_stride + r];
      const Float4 b = {a, a, a, a};
#pragma GCC unroll 16
      for (int64_t v = 0; v < kVectors; ++v) acc[m][v] += b * w[v];
    }
  }
#pragma GCC unroll 16
  for (int64_t m = 0; m < kRows; ++m) {
#pragma GCC unroll 16
    for (int64_t v = 0; v < kVectors; ++v) {
      const int64_t i = m * kBlockColumns + 4 * v;
      if (out.fold == nullptr) {
        std::memcpy(out.sums + i, &acc[m][v], sizeof(Float4));
        continue;
      }
      const Float4 folded = LoadFloat4(out.fold + i) + acc[m][v];
      std::memcpy(out.fold + i, &folded, sizeof(Float4));
      if (out.fold2 != nullptr) {
        const Float4 total = LoadFloat4(out.fold2 + i) + folded;
        std::memcpy(out.fold2 + i, &total, sizeof(Float4));
      }
    }
  }
}

// Eight Float4 accumulators whatever the row count: enough to hide the add latency, few enough
// for 16 vector registers.
template <int kRows>
void AccumulateRowsPortable(const float* xh, int64_t xh_stride, const float* strip,
                            const StripSums& out) {
  constexpr int64_t kVectors = 8 / kRows;
  for (int64_t c = 0; c < kBlockColumns; c += 4 * kVectors) {
    AccumulateTile<kRows, kVectors>(xh, xh_stride, strip + c, out.At(c));
  }
}

void AccumulateStripPortable(const float* xh, int64_t xh_stride, int64_t rows, const float* strip,
                             const StripSums& out) {
  constexpr RowsKernel kKernels[] = {nullptr, &AccumulateRowsPortable<1>,
                                     &AccumulateRowsPortable<2>, &AccumulateRowsPortable<3>,
                                     &AccumulateRowsPortable<4>};
  RunRowBlocks(kKernels, xh, xh_stride, rows, strip, out);
}

void RotateRowPortable(const float* x, const float* suh, int64_t k, float* xh) {
  for (int64_t i = 0; i < k; ++i) xh[i] = x[i] * suh[i];
  for (int64_t i = 0; i < k; i += kHadamardSize) exl3::Hadamard128(xh + i);
  for (int64_t i = 0; i < k; ++i) xh[i] = HalfToFloat(FloatToHalf(xh[i]));
}

void DecodeStripPortable(const exl3::Weight& w, int64_t tk, int64_t block, float* strip) {
  for (int64_t t = 0; t < kTilesPerBlock; ++t) {
    exl3::DecodeTile(w.tile(tk, block * kTilesPerBlock + t), w.bits(), w.codebook(),
                     strip + t * kTileSize, kBlockColumns);
  }
}

void FinishBlockPortable(float* total, const float* svh, const float* bias, float* out) {
  exl3::Hadamard128(total);
  for (int64_t c = 0; c < kBlockColumns; ++c) out[c] = total[c] * svh[c];
  if (bias != nullptr) {
    for (int64_t c = 0; c < kBlockColumns; ++c) out[c] += bias[c];
  }
}

}  // namespace

void RunRowBlocks(std::span<const RowsKernel> kernels, const float* xh, int64_t xh_stride,
                  int64_t rows, const float* strip, const StripSums& out) {
  const int64_t most = static_cast<int64_t>(kernels.size()) - 1;
  for (int64_t m = 0; m < rows; m += most) {
    kernels[std::min(most, rows - m)](xh + m * xh_stride, xh_stride, strip,
                                      out.At(m * kBlockColumns));
  }
}

// Each step calls its kAvx2 (or kAvx512) form only where one is built (x86-64) and asked for.
void RotateRow([[maybe_unused]] Isa isa, const float* x, const float* suh, int64_t k, float* xh) {
#if defined(__x86_64__)
  if (HasAvx2(isa)) return RotateRowAvx2(x, suh, k, xh);
#endif
  RotateRowPortable(x, suh, k, xh);
}

void DecodeStrip([[maybe_unused]] Isa isa, const exl3::Weight& w, int64_t tk, int64_t block,
                 float* strip) {
#if defined(__x86_64__)
  if (HasAvx2(isa)) return DecodeStripAvx2(w, tk, block, strip);
#endif
  DecodeStripPortable(w, tk, block, strip);
}

void AccumulateStrip([[maybe_unused]] Isa isa, const float* xh, int64_t xh_stride, int64_t rows,
                     const float* strip, const StripSums& out) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx512) return AccumulateStripAvx512(xh, xh_stride, rows, strip, out);
  if (HasAvx2(isa)) return AccumulateStripAvx2(xh, xh_stride, rows, strip, out);
#endif
  AccumulateStripPortable(xh, xh_stride, rows, strip, out);
}

void FinishBlock([[maybe_unused]] Isa isa, float* total, const float* svh, const float* bias,
                 float* out) {
#if defined(__x86_64__)
  if (HasAvx2(isa)) return FinishBlockAvx2(total, svh, bias, out);
#endif
  FinishBlockPortable(total, svh, bias, out);
}

}  // namespace twinspan::cpu::exl3_steps
