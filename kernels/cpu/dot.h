// The one fp32 dot product every row-invariant CPU op uses: its summation order depends on the
// length only (8 interleaved lanes, a fixed lane tree, then the tail in order), never on how many
// rows or threads share the call.
#ifndef TWINSPAN_KERNELS_CPU_DOT_H_
#define TWINSPAN_KERNELS_CPU_DOT_H_

#include <cstdint>
#include <cstring>

namespace twinspan::cpu {

typedef float Float8 __attribute__((vector_size(32)));

inline Float8 LoadFloat8(const float* p) {
  Float8 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

inline float SumLanes(Float8 v) {
  const float a0 = v[0] + v[4], a1 = v[1] + v[5], a2 = v[2] + v[6], a3 = v[3] + v[7];
  return (a0 + a2) + (a1 + a3);
}

// sum_i a[i] * b[i] in the fixed order above.
inline float Dot(const float* a, const float* b, int64_t n) {
  Float8 acc = {};
  const int64_t n8 = n - n % 8;
  for (int64_t i = 0; i < n8; i += 8) acc += LoadFloat8(a + i) * LoadFloat8(b + i);
  float sum = SumLanes(acc);
  for (int64_t i = n8; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// Four dot products against one shared `b`; each result equals Dot(a_r, b, n) bit for bit.
inline void Dot4(const float* a0, const float* a1, const float* a2, const float* a3, const float* b,
                 int64_t n, float out[4]) {
  Float8 c0 = {}, c1 = {}, c2 = {}, c3 = {};
  const int64_t n8 = n - n % 8;
  for (int64_t i = 0; i < n8; i += 8) {
    const Float8 w = LoadFloat8(b + i);
    c0 += LoadFloat8(a0 + i) * w;
    c1 += LoadFloat8(a1 + i) * w;
    c2 += LoadFloat8(a2 + i) * w;
    c3 += LoadFloat8(a3 + i) * w;
  }
  float s0 = SumLanes(c0), s1 = SumLanes(c1), s2 = SumLanes(c2), s3 = SumLanes(c3);
  for (int64_t i = n8; i < n; ++i) {
    s0 += a0[i] * b[i];
    s1 += a1[i] * b[i];
    s2 += a2[i] * b[i];
    s3 += a3[i] * b[i];
  }
  out[0] = s0;
  out[1] = s1;
  out[2] = s2;
  out[3] = s3;
}

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_DOT_H_
