// The stream and scratch every CUDA op receives first, as every CPU op receives cpu::Context.
// cuda::Context is defined beside the EXL3 linear, whose workspace rules it states; ops include it
// from here so they do not depend on that op.
#ifndef TWINSPAN_KERNELS_CUDA_CONTEXT_CUH_
#define TWINSPAN_KERNELS_CUDA_CONTEXT_CUH_

#include "kernels/cuda/exl3_linear.cuh"  // IWYU pragma: export (cuda::Context)

#endif  // TWINSPAN_KERNELS_CUDA_CONTEXT_CUH_
