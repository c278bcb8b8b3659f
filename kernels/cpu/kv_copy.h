// Copies positions between two KV caches of one shape: a cached prompt prefix goes into a new
// sequence's caches, and a sequence's rows into the cache's blocks, without a forward.
#ifndef TWINSPAN_KERNELS_CPU_KV_COPY_H_
#define TWINSPAN_KERNELS_CPU_KV_COPY_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/kv_cache.h"

namespace twinspan::cpu {

// dst positions [dst_first, dst_first + rows) = src positions [src_first, src_first + rows), keys
// and values, bit for bit (no conversion: both caches hold one dtype). InvalidArgument naming the
// argument for rows < 0, caches of different dtype, heads or head size, or src and dst the same
// cache; OutOfRange naming the cache and range when a range leaves its cache. A copy of a few MB,
// so ctx.pool is not used.
absl::Status KvCopy(const Context& ctx, const KvCache& src, int64_t src_first, KvCache& dst,
                    int64_t dst_first, int64_t rows);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_KV_COPY_H_
