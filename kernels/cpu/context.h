// What every CPU op receives first: the pool its independent outputs are spread over, and the
// instruction set its vector code may use.
#ifndef TWINSPAN_KERNELS_CPU_CONTEXT_H_
#define TWINSPAN_KERNELS_CPU_CONTEXT_H_

#include "kernels/cpu/isa.h"
#include "kernels/cpu/parallel.h"

namespace twinspan::cpu {

// Cheap to copy; the pool is owned by whoever made it (main, a test) and must outlive the ops.
struct Context {
  ThreadPool* pool = nullptr;  // Null runs single-threaded; results are identical either way.
  // The same bits on each; tests set kPortable to compare. REQUIRES: one this CPU runs.
  Isa isa = BestIsa();
};

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_CONTEXT_H_
