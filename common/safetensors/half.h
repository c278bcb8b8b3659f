// IEEE binary16 and bfloat16 conversions, bit-exact, round-to-nearest-even, no hardware needed.
#ifndef TWINSPAN_COMMON_SAFETENSORS_HALF_H_
#define TWINSPAN_COMMON_SAFETENSORS_HALF_H_

#include <bit>
#include <cstdint>

namespace twinspan {

// Exact: every half (subnormals, infinities, NaN payloads) has a float.
inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ff;
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;  // Subnormal or zero.
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// Round-to-nearest-even; values from 65520 up become infinity; NaN stays a (quiet) NaN.
inline uint16_t FloatToHalf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00 | ((a >> 13) & 0x3ff);
  if (a >= 0x477ff000u) return sign | 0x7c00;  // 65520 is the tie between 65504 and 65536.
  if (a >= 0x38800000u) {                      // Normal half: rebias the exponent by 112.
    const uint32_t r = a - 0x38000000u;
    uint32_t half = r >> 13;
    const uint32_t rest = r & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  if (a <= 0x33000000u) return sign;  // At most 2^-25: ties to the even zero.
  const uint32_t exponent = a >> 23;  // Subnormal half: units of 2^-24.
  const uint32_t mantissa = (a & 0x7fffff) | 0x800000;
  const uint32_t shift = 126 - exponent;
  uint32_t half = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (half & 1))) ++half;
  return static_cast<uint16_t>(sign | half);
}

// Exact.
inline float BFloat16ToFloat(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

// Round-to-nearest-even; NaN stays a (quiet) NaN.
inline uint16_t FloatToBFloat16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

}  // namespace twinspan

#endif  // TWINSPAN_COMMON_SAFETENSORS_HALF_H_
