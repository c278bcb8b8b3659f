// The three EXL3 codebooks: a 16-bit trellis state to its fp16 weight, bit-exact with exllamav3's
// CUDA decode (reference: exl3-format.md section 2.3; the golden LUTs check all 3 x 65536 states).
#ifndef TWINSPAN_COMMON_EXL3_CODEBOOK_H_
#define TWINSPAN_COMMON_EXL3_CODEBOOK_H_

#include <bit>
#include <cstdint>

#include "common/exl3/format.h"

namespace twinspan::exl3 {
namespace internal {

// A normal fp16 bit pattern as float, no branches (the 3inst/mcg mask guarantees normals).
inline float NormalHalfToFloat(uint32_t h) {
  return std::bit_cast<float>(((h & 0x8000u) << 16) | (((h & 0x7fffu) << 13) + (112u << 23)));
}

// Rounds a float to fp16 precision (nearest even). Exact only where the callers use it: values
// that are zero, fp16-normal, or have at most 4 significant bits below 2^-14.
inline float RoundToHalfPrecision(float f) {
  const uint32_t b = std::bit_cast<uint32_t>(f);
  return std::bit_cast<float>((b + 0xfffu + ((b >> 13) & 1u)) & ~0x1fffu);
}

inline float MaskedPairSum(uint32_t x) {
  x = (x & 0x8fff8fffu) ^ 0x3b603b60u;  // Each half becomes +-[0.125, 2): sign and 12 low bits.
  return RoundToHalfPrecision(NormalHalfToFloat(x & 0xffffu) + NormalHalfToFloat(x >> 16));
}

}  // namespace internal

// fp16 0x1EEE and 0xC931: mul1's scale (~1/147.7) and offset (~ -(1024 + 510) * scale).
inline constexpr float kMul1Scale = 0.00676727294921875f;
inline constexpr float kMul1Offset = -10.3828125f;

// The weight of `state` (< 65536) under `kCodebook`, as the float of an fp16 value.
template <Codebook kCodebook>
inline float CodebookValue(uint32_t state) {
  if constexpr (kCodebook == Codebook::k3Inst) {
    return internal::MaskedPairSum(state * k3InstMultiplier + k3InstAddend);
  } else if constexpr (kCodebook == Codebook::kMcg) {
    return internal::MaskedPairSum(state * kMcgMultiplier);
  } else {
    const uint32_t x = state * kMul1Multiplier;
    const uint32_t byte_sum = (x & 0xff) + ((x >> 8) & 0xff) + ((x >> 16) & 0xff) + (x >> 24);
    // (1024 + byte_sum) * scale + offset is exact in fp32; one rounding, like __hfma.
    return internal::RoundToHalfPrecision(static_cast<float>(1024 + byte_sum) * kMul1Scale +
                                          kMul1Offset);
  }
}

// Runtime-dispatched form; returns the fp16 bits.
uint16_t CodebookHalf(Codebook codebook, uint16_t state);

}  // namespace twinspan::exl3

#endif  // TWINSPAN_COMMON_EXL3_CODEBOOK_H_
