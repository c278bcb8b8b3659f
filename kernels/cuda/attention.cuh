// Scaled dot-product attention with grouped KV heads over a cuda::KvCache: the twin of
// kernels/cpu/attention.h (causal for the target's prompt and verify windows, full with a window
// for the drafter).
//
// Row-invariant: a query row reads the key range its own position (and, for kFull, num_keys)
// fixes; keys are reduced in chunks of cpu::kAttentionKeyChunk absolute positions, each chunk's
// (max, sum, P.V) in an order fixed by head_dim and the chunk's key count, and the chunks are
// merged with the CPU op's online-softmax step one by one in position order. Whether one block
// walks all of a row's chunks or the chunks run on separate blocks and a second kernel merges them,
// the arithmetic is the same, so the bits never depend on the row count or on the strategy.
#ifndef TWINSPAN_KERNELS_CUDA_ATTENTION_CUH_
#define TWINSPAN_KERNELS_CUDA_ATTENTION_CUH_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "kernels/cpu/attention.h"
#include "kernels/cuda/context.cuh"
#include "kernels/cuda/kv_cache.cuh"

namespace twinspan::cuda {

// kAuto spreads chunks over blocks when few (row, kv head) pairs would leave the GPU idle and
// ctx.workspace is large enough; the others force a strategy (tests).
enum class AttentionStrategy { kAuto, kOneBlockPerRow, kBlockPerChunk };

// Bytes of ctx.workspace the strategy uses for `rows` rows over `num_keys` keys: kBlockPerChunk's
// per-chunk partials, the same for kAuto when it would split (else 0), 0 for kOneBlockPerRow.
size_t AttentionWorkspaceBytes(const cpu::AttentionShape& shape, int64_t rows, int64_t num_keys,
                               AttentionStrategy strategy = AttentionStrategy::kAuto);

// out[r, h*D:(h+1)*D] = softmax_k(scale * q[r,h] . K[k, h']) V[k, h'] over row r's visible keys
// among cache slots [0, num_keys); q and out in device memory, `positions` on the host.
// InvalidArgument as the CPU op (shape against the cache, num_keys outside [1, capacity], a row
// that sees no key) and naming the limit for head_dim above 256, more than 16 query heads per kv
// head or more than 2,048 query values per kv head; ResourceExhausted for kBlockPerChunk with a
// workspace below AttentionWorkspaceBytes. Asynchronous on ctx.stream.
absl::Status Attention(const Context& ctx, const cpu::AttentionShape& shape, const float* q,
                       int64_t q_stride, const int64_t* positions, int64_t rows,
                       const KvCacheView& kv, int64_t num_keys, float* out, int64_t out_stride,
                       AttentionStrategy strategy = AttentionStrategy::kAuto);

// cpu::TreeAttention on device memory (parents on the host): each row over the committed slots and
// its ancestors' slots, chunked by position, so a row gets the bits Attention gives the last row
// of its path's chain. Spreads chunks over blocks as kAuto does when ctx.workspace holds
// TreeAttentionWorkspaceBytes. InvalidArgument as the CPU op and Attention's kernel limits, and
// for a tree of more than 256 rows or 128 levels. Asynchronous on ctx.stream.
absl::Status TreeAttention(const Context& ctx, const cpu::AttentionShape& shape, const float* q,
                           int64_t q_stride, const int32_t* parents, int64_t rows,
                           int64_t first_slot, const KvCacheView& kv, float* out,
                           int64_t out_stride);

// Bytes of ctx.workspace TreeAttention would spread chunks through (0: it would not).
size_t TreeAttentionWorkspaceBytes(const cpu::AttentionShape& shape,
                                   absl::Span<const int32_t> parents, int64_t first_slot);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_ATTENTION_CUH_
