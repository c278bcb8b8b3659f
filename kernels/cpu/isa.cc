#include "kernels/cpu/isa.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace twinspan::cpu {

Isa BestIsa() {
#if defined(__x86_64__)
  // CPUID leaf 1 (FMA, OSXSAVE, AVX, F16C), XCR0 (the OS saves YMM state) and leaf 7 (AVX2).
  unsigned eax, ebx, ecx, edx;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return Isa::kPortable;
  constexpr unsigned kLeaf1 = (1u << 12) | (1u << 27) | (1u << 28) | (1u << 29);
  if ((ecx & kLeaf1) != kLeaf1) return Isa::kPortable;
  unsigned xcr0_lo, xcr0_hi;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 6u) != 6u) return Isa::kPortable;  // XMM and YMM state.
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return Isa::kPortable;
  return (ebx & (1u << 5)) != 0 ? Isa::kAvx2 : Isa::kPortable;
#else
  return Isa::kPortable;
#endif
}

}  // namespace twinspan::cpu
