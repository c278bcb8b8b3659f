// Which vector instruction set the CPU ops run: every op gives the same bits on each (the
// row-invariance contract of DESIGN.md), so the choice only changes speed.
#ifndef TWINSPAN_KERNELS_CPU_ISA_H_
#define TWINSPAN_KERNELS_CPU_ISA_H_

namespace twinspan::cpu {

// kPortable: baseline x86-64 (SSE2) or ARM64 code. kAvx2: x86-64 with AVX2, FMA and F16C.
enum class Isa { kPortable, kAvx2 };

// kAvx2 where this CPU and its OS run AVX2, FMA and F16C (x86-64 only), else kPortable. Asks the
// CPU each call (CPUID, slow under a hypervisor): call it once and keep the answer.
Isa BestIsa();

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_ISA_H_
