// Copies positions between two KV caches of one shape on the GPU: the twin of
// kernels/cpu/kv_copy.h (a cached prompt prefix into a new sequence, a sequence's rows into the
// prefix cache's blocks).
#ifndef TWINSPAN_KERNELS_CUDA_KV_COPY_CUH_
#define TWINSPAN_KERNELS_CUDA_KV_COPY_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/context.cuh"
#include "kernels/cuda/kv_cache.cuh"

namespace twinspan::cuda {

// cpu::KvCopy on device caches, asynchronous on ctx.stream (two device-to-device copies: the
// layout is [capacity, kv_heads, head_dim], so a run of positions is contiguous). The same errors
// as cpu::KvCopy, plus Internal for a failed copy.
absl::Status KvCopy(const Context& ctx, const KvCache& src, int64_t src_first, KvCache& dst,
                    int64_t dst_first, int64_t rows);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_KV_COPY_CUH_
