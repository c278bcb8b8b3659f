// Structured output's mask on the GPU: the twin of cpu::MaskLogits (kernels/cpu/mask_logits.h).
// Writing -inf is exact, so the masked rows equal the CPU's bit for bit and cuda::Sample then
// draws what sampler::KeyedSampler draws from them.
#ifndef TWINSPAN_KERNELS_CUDA_MASK_LOGITS_CUH_
#define TWINSPAN_KERNELS_CUDA_MASK_LOGITS_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/context.cuh"

namespace twinspan::cuda {

// logits[r * stride + i] = -inf for every i < vocab whose bit in row r's mask (allowed +
// r * (vocab + 31) / 32 words, device memory) is clear, for r < rows. InvalidArgument for
// vocab < 1, stride < vocab, rows < 0 or a null pointer with rows > 0. Asynchronous.
absl::Status MaskLogits(const Context& ctx, float* logits, int64_t stride, int64_t vocab,
                        const uint32_t* allowed, int64_t rows);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_MASK_LOGITS_CUH_
