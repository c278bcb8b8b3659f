// The EXL3 decode's own ceiling on this GPU: one persistent launch streams a trellis buffer in the
// device layout (exl3_layout.h), half-strip after half-strip, and does per tile only what any
// linear of that many rows must: load the lane's words, decode the tile into the mma A fragment
// (exl3_decode.cuh, the kernels' own decode) and multiply it with one (8 rows) or two (16 rows)
// B fragments. No input rotation, no partials, no epilogue, no launch per weight: the bound that
// the EXL3 linear's time is read against, as copy bandwidth bounds its bytes.
#ifndef TWINSPAN_TOOLS_GPU_DECODE_BOUND_CUH_
#define TWINSPAN_TOOLS_GPU_DECODE_BOUND_CUH_

#include <cuda_runtime.h>

#include <cstdint>

namespace twinspan::gpu {

enum class DecodeWork {
  kLoad,        // The loads alone, folded into one register: the streaming pattern's bandwidth.
  kDecodeMma1,  // Loads, decode, one mma a tile: a linear of up to 8 rows.
  kDecodeMma2,  // Loads, decode, two mmas a tile: a linear of 9..16 rows.
};

// Warps of a block (one block an SM) and half-strips each warp keeps in flight in registers.
struct DecodeShape {
  int warps, depth;
};
inline constexpr DecodeShape kDecodeShapes[] = {{16, 4}, {24, 4}, {32, 2}};

// Streams `half_strips` half-strips of K = `bits` (4 or 6; 128 * bits bytes each) from `words`
// with `sms` blocks of `shape`, mul1 codebook; each warp writes one float to `sink` (at least
// sms * 32 floats) so that nothing is optimized away. InvalidValue for an unknown bits or shape.
cudaError_t DecodeStream(const uint32_t* words, int64_t half_strips, int bits, DecodeWork work,
                         DecodeShape shape, int sms, float* sink, cudaStream_t stream);

}  // namespace twinspan::gpu

#endif  // TWINSPAN_TOOLS_GPU_DECODE_BOUND_CUH_
