// The CPU backend: backend::Backend in host memory, each op forwarded to its twinspan::cpu op of
// the same name on one thread pool, so its results are those ops' results bit for bit.
//
// It also checks what a device backend cannot cheaply check: every pointer range an op reads or
// writes must lie inside one live buffer of this backend, and every handle and buffer must be its
// own (InvalidArgument naming the op and argument otherwise). Model code that runs clean here
// passes no stray offsets to a GPU.
#ifndef TWINSPAN_KERNELS_CPU_CPU_BACKEND_H_
#define TWINSPAN_KERNELS_CPU_CPU_BACKEND_H_

#include <memory>

#include "kernels/backend/backend.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/parallel.h"

namespace twinspan::cpu {

// A CPU backend running its ops on `pool` (not owned, must outlive the backend; null runs them on
// the calling thread). Results do not depend on the pool's thread count.
std::unique_ptr<backend::Backend> NewCpuBackend(ThreadPool* pool);

// The CPU weight behind `handle` when a CPU backend made it, else null (tests, tools).
const LinearWeight* CpuLinearWeight(const backend::LinearHandle& handle);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_CPU_BACKEND_H_
