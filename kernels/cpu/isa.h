// Which vector instruction set the CPU ops run: every op gives the same bits on each (the
// row-invariance contract of DESIGN.md), so the choice only changes speed.
#ifndef TWINSPAN_KERNELS_CPU_ISA_H_
#define TWINSPAN_KERNELS_CPU_ISA_H_

#include <vector>

namespace twinspan::cpu {

// kPortable: baseline x86-64 (SSE2) or ARM64 code. kAvx2: x86-64 with AVX2, FMA and F16C.
// kAvx512: kAvx2 plus AVX-512 F, DQ, BW and VL; an op without 512-bit code runs its kAvx2 form.
enum class Isa { kPortable, kAvx2, kAvx512 };

// True where the AVX2 code may run (kAvx2 and kAvx512).
inline bool HasAvx2(Isa isa) { return isa != Isa::kPortable; }

// "portable", "avx2" or "avx512".
const char* IsaName(Isa isa);

// The best of the above this CPU and its OS run (x86-64 only; else kPortable). Asks the CPU each
// call (CPUID, slow under a hypervisor): call it once and keep the answer.
Isa BestIsa();

// Every instruction set up to BestIsa(), kPortable first: what tests compare.
std::vector<Isa> RunnableIsas();

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_ISA_H_
