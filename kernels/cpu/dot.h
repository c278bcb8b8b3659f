// The one fp32 dot product every row-invariant CPU op uses: its summation order depends on the
// length only (8 interleaved lanes, a fixed lane tree, then the tail in order), never on how many
// rows or threads share the call. Lanes are two 4-wide vectors so any x86-64 or ARM64 runs them.
#ifndef TWINSPAN_KERNELS_CPU_DOT_H_
#define TWINSPAN_KERNELS_CPU_DOT_H_

#include <cstdint>
#include <cstring>

namespace twinspan::cpu {

typedef float Float4 __attribute__((vector_size(16)));

inline Float4 LoadFloat4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Lane l of lo holds indices = l (mod 8), lane l of hi indices = l + 4 (mod 8).
inline float SumLanes(Float4 lo, Float4 hi) {
  const Float4 a = lo + hi;
  return (a[0] + a[2]) + (a[1] + a[3]);
}

// sum_i a[i] * b[i] in the fixed order above.
inline float Dot(const float* a, const float* b, int64_t n) {
  Float4 lo = {}, hi = {};
  const int64_t n8 = n - n % 8;
  for (int64_t i = 0; i < n8; i += 8) {
    lo += LoadFloat4(a + i) * LoadFloat4(b + i);
    hi += LoadFloat4(a + i + 4) * LoadFloat4(b + i + 4);
  }
  float sum = SumLanes(lo, hi);
  for (int64_t i = n8; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// Four dot products against one shared `b`; each result equals Dot(a_r, b, n) bit for bit.
inline void Dot4(const float* a0, const float* a1, const float* a2, const float* a3, const float* b,
                 int64_t n, float out[4]) {
  Float4 l0 = {}, h0 = {}, l1 = {}, h1 = {}, l2 = {}, h2 = {}, l3 = {}, h3 = {};
  const int64_t n8 = n - n % 8;
  for (int64_t i = 0; i < n8; i += 8) {
    const Float4 wl = LoadFloat4(b + i), wh = LoadFloat4(b + i + 4);
    l0 += LoadFloat4(a0 + i) * wl;
    h0 += LoadFloat4(a0 + i + 4) * wh;
    l1 += LoadFloat4(a1 + i) * wl;
    h1 += LoadFloat4(a1 + i + 4) * wh;
    l2 += LoadFloat4(a2 + i) * wl;
    h2 += LoadFloat4(a2 + i + 4) * wh;
    l3 += LoadFloat4(a3 + i) * wl;
    h3 += LoadFloat4(a3 + i + 4) * wh;
  }
  float s0 = SumLanes(l0, h0), s1 = SumLanes(l1, h1), s2 = SumLanes(l2, h2), s3 = SumLanes(l3, h3);
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
