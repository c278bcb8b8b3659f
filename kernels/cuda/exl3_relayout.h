// The host-side relayout of an EXL3 weight (or column view) into the CUDA device layout on several
// threads: column blocks are independent in that layout (exl3_layout.h), so threads take ranges of
// blocks. Uploading the 27B's 13 GB of trellis is bound by this relayout on one thread.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_RELAYOUT_H_
#define TWINSPAN_KERNELS_CUDA_EXL3_RELAYOUT_H_

#include <cstdint>
#include <memory>

#include "common/exl3/weight.h"

namespace twinspan::cuda {

// w.k() * w.n() * w.bits() / 8 bytes of w's blocks in the device layout, made on `threads` threads
// (at least 1; the bytes never depend on it). REQUIRES: w loaded (k, n multiples of 128).
std::unique_ptr<uint32_t[]> RelayoutExl3(const exl3::Weight& w, int threads);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_RELAYOUT_H_
