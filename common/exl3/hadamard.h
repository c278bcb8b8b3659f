// The 128-point Sylvester Hadamard transform EXL3 applies on both sides of every weight,
// H[i][j] = (-1)^popcount(i & j) / sqrt(128), which is its own inverse.
#ifndef TWINSPAN_COMMON_EXL3_HADAMARD_H_
#define TWINSPAN_COMMON_EXL3_HADAMARD_H_

namespace twinspan::exl3 {

// 1 / sqrt(128), rounded to fp32.
inline constexpr float kHadamardScale = 0.088388347648318440550f;

// x[0..127] <- H x, in fp32. Fixed order: seven butterfly stages h = 1, 2, ..., 64, each
// (a, b) -> (a + b, a - b) over j with (j & h) == 0 in increasing j, then one multiply by
// kHadamardScale per element. The same input always gives the same bits.
void Hadamard128(float* x);

}  // namespace twinspan::exl3

#endif  // TWINSPAN_COMMON_EXL3_HADAMARD_H_
