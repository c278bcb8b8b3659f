// Affine 4-bit linear weights (Q4) and y = x @ W^T over them; the drafter's linears at 4 bits.
//
// Format (docs/formats.md, "Q4"): W is [n = out_features, k = in_features] with k a multiple of
// kQ4GroupSize. Row j is cut into groups of 128 consecutive input features; group g of row j has
// an fp16 scale s and an fp16 offset o, and each element a 4-bit code q in 0..15:
//   w[j, i] = float(s) * q + float(o)
// The product is exact in fp32 (11 x 4 significant bits), so the one rounding is in the add; an
// fma gives the same value. Codes pack two per byte, row-major: element i of row j is in byte
// j * k / 2 + i / 2, even i in the low nibble.
//
// Q4Linear reduces each output as cpu::Linear reduces a dense weight (Dot of kernels/cpu/dot.h over
// the dequantized row, an order fixed by k alone), so it is row- and thread-invariant and equals
// cpu::Linear of Dequantize() bit for bit.
#ifndef TWINSPAN_KERNELS_CPU_Q4_LINEAR_H_
#define TWINSPAN_KERNELS_CPU_Q4_LINEAR_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

// Input features per (scale, offset) pair.
inline constexpr int64_t kQ4GroupSize = 128;
inline constexpr int kQ4MaxCode = 15;

// Tensor name suffixes of a Q4 linear stored under a prefix P (P.q4_codes replaces P.weight).
inline constexpr char kQ4CodesSuffix[] = ".q4_codes";      // U8 [n, k / 2]
inline constexpr char kQ4ScalesSuffix[] = ".q4_scales";    // F16 [n, k / 128]
inline constexpr char kQ4OffsetsSuffix[] = ".q4_offsets";  // F16 [n, k / 128]

// A value type; immutable after construction, so any number of threads may read it.
class Q4Weight {
 public:
  Q4Weight() = default;

  // From stored parts: codes [n, k / 2], scales and offsets [n, k / 128] as fp16 bits.
  // InvalidArgument naming `name` for n or k not positive, k not a multiple of 128, a part of the
  // wrong size, or a scale or offset that is not finite.
  static absl::StatusOr<Q4Weight> Create(const std::string& name, int64_t n, int64_t k,
                                         std::vector<uint8_t> codes, std::vector<uint16_t> scales,
                                         std::vector<uint16_t> offsets);

  // Quantizes dense `values` [n, k] row-major. Per group: o = the group's minimum rounded down to
  // fp16, s = (max - o) / 15 rounded up to fp16, q = the nearest code to (w - o) / s; so every
  // |w - dequantized w| <= s / 2 plus one fp32 rounding of the result.
  // InvalidArgument naming `name` for a bad shape, a value that is not finite, or one outside
  // fp16's range (|w| > 65504).
  static absl::StatusOr<Q4Weight> Quantize(const std::string& name, int64_t n, int64_t k,
                                           std::span<const float> values);

  int64_t out_features() const { return n_; }
  int64_t in_features() const { return k_; }
  int64_t groups_per_row() const { return k_ / kQ4GroupSize; }

  // The stored parts, in the layout above.
  std::span<const uint8_t> codes() const { return codes_; }
  std::span<const uint16_t> scales() const { return scales_; }
  std::span<const uint16_t> offsets() const { return offsets_; }
  // Bytes the three parts hold: k / 2 + 4 * k / 128 per row (0.53 bytes a weight).
  int64_t bytes() const;

  // out[k] = row j dequantized. REQUIRES: 0 <= j < out_features().
  void DequantizeRow(int64_t j, float* out) const;
  // [n, k] row-major.
  std::vector<float> Dequantize() const;

 private:
  int64_t n_ = 0;
  int64_t k_ = 0;
  std::vector<uint8_t> codes_;
  std::vector<uint16_t> scales_;
  std::vector<uint16_t> offsets_;
};

// y[rows, n] = x[rows, k] @ dequant(W)^T with row strides x_stride / y_stride in floats; x and y
// must not overlap. InvalidArgument for an empty weight, rows < 0 or a stride below the row.
absl::Status Q4Linear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                      const Q4Weight& w, float* y, int64_t y_stride);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_Q4_LINEAR_H_
