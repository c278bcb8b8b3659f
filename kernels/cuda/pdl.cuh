// Programmatic dependent launch (sm_90+; a no-op before). A grid launched with programmatic stream
// serialization (the EXL3 linear) may start once every block of the grid before it has called
// AllowNextGrid, and must call WaitForPriorGrids before it reads what that grid writes. The ops
// that feed an EXL3 linear allow it at their start, so its blocks stream their first weights while
// the op finishes.
#ifndef TWINSPAN_KERNELS_CUDA_PDL_CUH_
#define TWINSPAN_KERNELS_CUDA_PDL_CUH_

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

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_PDL_CUH_
