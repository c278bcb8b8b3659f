// Synthetic EXL3 weights and inputs made directly on the GPU: any bit string is a valid trellis, so
// random words give a checkpoint of the real shapes without a file. Never zeros.
#ifndef TWINSPAN_TOOLS_GPU_SYNTHETIC_CUH_
#define TWINSPAN_TOOLS_GPU_SYNTHETIC_CUH_

#include <cuda_runtime.h>

#include <cstdint>

namespace twinspan::gpu {

// words[i] = a hash of (seed, i): uniform over all 2^16 values.
cudaError_t FillRandomWords(uint16_t* words, int64_t count, uint64_t seed, cudaStream_t stream);

// fp16 sign * U(0.02, 0.1), as exllamav3's suh / svh are scaled.
cudaError_t FillRandomScales(uint16_t* halves, int64_t count, uint64_t seed, cudaStream_t stream);

// Approximately N(0, 1) floats (sum of four uniforms, rescaled).
cudaError_t FillRandomNormal(float* values, int64_t count, uint64_t seed, cudaStream_t stream);

// A kernel that spins for `cycles` SM clock cycles: queued before timed calls so the GPU runs them
// back to back while the host is still enqueueing.
cudaError_t Spin(int64_t cycles, cudaStream_t stream);

}  // namespace twinspan::gpu

#endif  // TWINSPAN_TOOLS_GPU_SYNTHETIC_CUH_
