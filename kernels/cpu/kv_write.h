// Writes a window's keys and values into one layer's KV cache at their absolute positions.
#ifndef TWINSPAN_KERNELS_CPU_KV_WRITE_H_
#define TWINSPAN_KERNELS_CPU_KV_WRITE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/kv_cache.h"

namespace twinspan::cpu {

// For r < rows: KvCache::Write(positions[r], k + r * k_stride, v + r * v_stride), each row
// kv.row_size() floats (bf16 caches round to nearest even). Either every row is written or none:
// InvalidArgument for rows < 0, a stride below kv.row_size() or a null array; OutOfRange naming the
// row and position when a position is outside [0, capacity). Rows are written in order (a repeated
// position keeps the last row); a row is a copy of a few KB, so ctx.pool is not used.
absl::Status KvWrite(const Context& ctx, KvCache& kv, const int64_t* positions, int64_t rows,
                     const float* k, int64_t k_stride, const float* v, int64_t v_stride);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_KV_WRITE_H_
