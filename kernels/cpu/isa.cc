#include "kernels/cpu/isa.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace twinspan::cpu {

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kPortable:
      return "portable";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "unknown";
}

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
  if ((ebx & (1u << 5)) == 0) return Isa::kPortable;
  // Leaf 7 EBX: AVX-512 F (16), DQ (17), BW (30), VL (31); XCR0: opmask and ZMM state (5-7).
  constexpr unsigned kAvx512 = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);
  return (ebx & kAvx512) == kAvx512 && (xcr0_lo & 0xe0u) == 0xe0u ? Isa::kAvx512 : Isa::kAvx2;
#else
  return Isa::kPortable;
#endif
}

std::vector<Isa> RunnableIsas() {
  std::vector<Isa> isas;
  const Isa best = BestIsa();
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
    if (static_cast<int>(isa) <= static_cast<int>(best)) isas.push_back(isa);
  }
  return isas;
}

}  // namespace twinspan::cpu
