// expf on 8 lanes with the bits of std::exp(float) where kernels/cpu runs AVX2 code: glibc's expf
// (sysdeps/ieee754/flt-32/e_expf.c) as glibc builds it for CPUs with FMA and AVX2, the variant its
// ifunc picks on every CPU that cpu::BestIsa() calls kAvx2. Each lane: x to double,
// kd = fma(32/ln2, x, 1.5 * 2^52), r = fma(32/ln2, x, -(kd - 1.5 * 2^52)), 2^(k/32) from a 32-entry
// table, then s * fma(fma(C0, r, C1), r * r, fma(r, C2, 1)) rounded to float. Lanes with |x| >= 88
// or NaN (glibc's special cases) call std::exp itself. cpu_attention_paths_test checks the bits
// against std::exp on this machine's glibc.
#ifndef TWINSPAN_KERNELS_CPU_EXP_AVX2_H_
#define TWINSPAN_KERNELS_CPU_EXP_AVX2_H_

#if defined(__x86_64__)

#include <cstdint>

namespace twinspan::cpu {

// y[i] = std::exp(x[i]) for i < n; y may be x. REQUIRES: HasAvx2(BestIsa()).
void ExpAvx2(const float* x, int64_t n, float* y);

}  // namespace twinspan::cpu

#endif  // defined(__x86_64__)

#endif  // TWINSPAN_KERNELS_CPU_EXP_AVX2_H_
