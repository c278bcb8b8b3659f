// The EXL3 tile encoder on the GPU: the same tail-biting two-pass Viterbi as cpu::TrellisEncode
// (kernels/cpu/trellis_encode.h), the same states bit for bit (tested), one block per tile.
#ifndef TWINSPAN_KERNELS_CUDA_TRELLIS_ENCODE_CUH_
#define TWINSPAN_KERNELS_CUDA_TRELLIS_ENCODE_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/trellis_encode.h"
#include "kernels/cuda/context.cuh"

namespace twinspan::cuda {

// tiles [num_tiles, 256] fp32 targets in position order -> states and values [num_tiles, 256],
// all device memory. Scratch (the back-pointers, 256 x 2^(16-K) bytes a tile, at most 512 MB per
// launch) is allocated on ctx.stream. InvalidArgument as the CPU op's; ResourceExhausted when the
// scratch cannot be had. Asynchronous on ctx.stream.
absl::Status TrellisEncode(const Context& ctx, const float* tiles, int64_t num_tiles,
                           const cpu::TrellisEncodeParams& params, uint16_t* states, float* values);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_TRELLIS_ENCODE_CUH_
