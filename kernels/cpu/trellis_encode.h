// The EXL3 tile encoder: for each tile of 256 target values (in trellis position order), the
// tail-biting sequence of 16-bit trellis states whose codebook values are closest in squared error
// (exl3-format.md section 5.5; QTIP's bitshift trellis with L = 16).
//
// Two passes of Viterbi over the 2^(16-K) edges (a state's low 16-K bits), fp32 costs:
//   1. from position 128 round to 127 with every start allowed; the best path's edge entering
//      position 0 is kept;
//   2. from position 0 to 255 with the start pinned to that edge, traced back from the same edge,
//      so state[0] >> K == state[255] & (2^(16-K) - 1): the ring closes.
// A step's cost for state s = (k << (16-K)) | e is fma(d, d, cost[s >> K]) with d = value(s) - x
// (one rounding), minimized over k; back-pointers are recomputed from the kept cost rows during the
// traceback (first k that reaches the minimum), so the forward loop is only subtract, fma, min.
// The AVX2 path and the scalar fallback do the same fp32 operations, so every machine gives the
// same states; each tile is independent, so the result never depends on the thread count.
#ifndef TWINSPAN_KERNELS_CPU_TRELLIS_ENCODE_H_
#define TWINSPAN_KERNELS_CPU_TRELLIS_ENCODE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "common/exl3/format.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

struct TrellisEncodeParams {
  int bits = 4;  // K, 1..8: code bits per position.
  exl3::Codebook codebook = exl3::Codebook::kMul1;
};

// tiles: [num_tiles, 256] fp32 targets, position order (exl3::kTensorCorePerm maps a position to
// its tile element). Writes states [num_tiles, 256] and values [num_tiles, 256] (the codebook value
// of each state, an exact fp16 value). Tiles spread over ctx.pool; scratch is 257 * 2^(16-K) floats
// per running thread (33 MB at K = 1, 4 MB at K = 4). InvalidArgument for bits outside 1..8,
// num_tiles < 0, or a null pointer with num_tiles > 0.
absl::Status TrellisEncode(const Context& ctx, const float* tiles, int64_t num_tiles,
                           const TrellisEncodeParams& params, uint16_t* states, float* values);

// The argument checks both twins (this and cuda::TrellisEncode) make, with their messages.
absl::Status ValidateTrellisEncode(const float* tiles, int64_t num_tiles,
                                   const TrellisEncodeParams& params, const uint16_t* states,
                                   const float* values);

// The same with the plain scalar loop only (the reference the vector path is tested against).
absl::Status TrellisEncodeScalar(const Context& ctx, const float* tiles, int64_t num_tiles,
                                 const TrellisEncodeParams& params, uint16_t* states,
                                 float* values);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_TRELLIS_ENCODE_H_
