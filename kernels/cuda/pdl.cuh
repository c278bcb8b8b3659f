// Programmatic dependent launch (sm_90+; a no-op before). A grid launched by LaunchPdl may be
// scheduled once every block of the grid before it has called AllowNextGrid (or exited), and must
// call WaitForPriorGrids before it touches memory another grid writes. The forward's kernels start
// with StartDependent, so each one's launch and block scheduling overlap the previous kernel (0.9
// ms of a 1-row verify's ~700 such kernels on the H200); the EXL3 linear waits only after it has
// started streaming its weights, and from 9 rows launches cooperatively (LaunchCooperative).
#ifndef TWINSPAN_KERNELS_CUDA_PDL_CUH_
#define TWINSPAN_KERNELS_CUDA_PDL_CUH_

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "kernels/cuda/pdl_scope.h"

namespace twinspan::cuda {

__device__ __forceinline__ void WaitForPriorGrids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void AllowNextGrid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" :::);
#endif
}

// The first statement of every forward kernel: the next grid may be scheduled, and this one waits
// for the previous grid's writes (at once after a plain launch). Every grid waits, so each also
// follows the ones before.
__device__ __forceinline__ void StartDependent() {
  AllowNextGrid();
  WaitForPriorGrids();
}

// kernel<<<grid, block, smem, stream>>>(args...) with one launch attribute, or none if `attr` is
// null; launch errors show in cudaGetLastError, as for <<<>>>.
template <typename... Params, typename... Args>
void LaunchWithAttribute(const cudaLaunchAttribute* attr, void (*kernel)(Params...), dim3 grid,
                         dim3 block, size_t smem, cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute copy = {};
  if (attr != nullptr) copy = *attr;
  config.attrs = &copy;
  config.numAttrs = attr != nullptr ? 1 : 0;
  cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

// The same, allowed to start while the stream's previous kernel runs if `early`.
template <typename... Params, typename... Args>
void LaunchMaybeEarly(bool early, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                      cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  LaunchWithAttribute(early ? &attr : nullptr, kernel, grid, block, smem, stream,
                      std::forward<Args>(args)...);
}

// The same with every block resident at once (blocks that wait on each other), after the stream's
// previous kernel: a cooperative launch never starts early.
template <typename... Params, typename... Args>
void LaunchCooperative(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                       cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeCooperative;
  attr.val.cooperative = 1;
  LaunchWithAttribute(&attr, kernel, grid, block, smem, stream, std::forward<Args>(args)...);
}

// A kernel that starts with StartDependent.
template <typename... Params, typename... Args>
void LaunchPdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
               Args&&... args) {
  LaunchMaybeEarly(PdlScopeFromEnv() == PdlScope::kAll, kernel, grid, block, smem, stream,
                   std::forward<Args>(args)...);
}

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_PDL_CUH_
