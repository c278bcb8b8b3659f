// Deterministic random tensor contents: element e of tensor t depends only on the seed, t's name
// and fill, and e, so any split of the work over threads and chunks writes the same bytes.
#ifndef TWINSPAN_TOOLS_SYNTH_FILL_H_
#define TWINSPAN_TOOLS_SYNTH_FILL_H_

#include <cstddef>
#include <cstdint>

#include "tools/synth/tensor_spec.h"

namespace twinspan::synth {

// Elements are drawn in independent blocks of this many; chunks of work start on a block.
inline constexpr int64_t kFillBlockElements = int64_t{1} << 16;

// Writes elements [begin, begin + count) of `t` to `out` (count * DTypeSize(t.dtype) bytes,
// little-endian). REQUIRES: begin % kFillBlockElements == 0, begin + count <= t.numel(), and a
// dtype the fill supports (kUniform: F32/F16/BF16; kSignScale: F16; kRandomBits: I16/U8/I8;
// kConstant: I32), as the presets guarantee.
void FillElements(const TensorSpec& t, uint64_t seed, int64_t begin, int64_t count, std::byte* out);

}  // namespace twinspan::synth

#endif  // TWINSPAN_TOOLS_SYNTH_FILL_H_
