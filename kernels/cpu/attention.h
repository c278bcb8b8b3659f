// Scaled dot-product attention with grouped KV heads over a KvCache, for the target (causal) and
// the drafter (non-causal over context + block).
//
// Row-invariant: a query row sees a key range fixed by its own absolute position (or by num_keys
// for kFull), and keys are reduced in fixed chunks of kAttentionKeyChunk absolute positions with an
// online softmax merged chunk by chunk in position order. No other row changes its result; rows
// of one call only share the reading (and bf16 widening) of each chunk. The arithmetic order is
// spelled out in kernels/cpu/attention_steps.h, with its AVX2 form.
#ifndef TWINSPAN_KERNELS_CPU_ATTENTION_H_
#define TWINSPAN_KERNELS_CPU_ATTENTION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/kv_cache.h"

namespace twinspan::cpu {

// Keys per softmax chunk, by absolute position: chunk c covers positions [c * 128, (c + 1) * 128).
inline constexpr int64_t kAttentionKeyChunk = 128;

enum class AttentionMask {
  kCausal,  // Row at position p sees keys [0, p] (within the window, if any).
  kFull,    // Every row sees keys [0, num_keys) (within the window both ways, if any).
};

struct AttentionShape {
  int64_t num_heads = 0;     // Query heads.
  int64_t num_kv_heads = 0;  // Query head h reads kv head h / (num_heads / num_kv_heads).
  int64_t head_dim = 0;
  float scale = 0.0f;  // Multiplies q.k; 1/sqrt(head_dim) for Qwen3.
  AttentionMask mask = AttentionMask::kCausal;
  int64_t window = 0;  // 0: none; else a key at k is seen only when |p - k| < window.
};

// out[r, h*D:(h+1)*D] = softmax_k(scale * q[r,h] . K[k, h']) V[k, h'] over row r's visible keys
// among cache slots [0, num_keys); slot k holds absolute position k. q row r starts at
// q + r * q_stride (num_heads * head_dim floats), out row r at out + r * out_stride.
// InvalidArgument when the shape disagrees with the cache, num_heads is not a multiple of
// num_kv_heads, num_keys is outside [1, capacity], or a causal row's position is not below
// num_keys (every row must see at least its own key).
absl::Status Attention(const Context& ctx, const AttentionShape& shape, const float* q,
                       int64_t q_stride, const int64_t* positions, int64_t rows, const KvCache& kv,
                       int64_t num_keys, float* out, int64_t out_stride);

// Attention of a tree window (kernels/cpu/tree_rows.h) whose K/V rows were written to cache slots
// first_slot + r: row r, at position first_slot + depth(r), sees slots [0, first_slot) at their
// own positions, then its ancestors' slots, itself last, at positions first_slot + 0..depth(r).
// It so reads the keys, at the positions and in the chunks, of the chain verify of its path: the
// same bits. InvalidArgument as Attention's shape checks, for bad parents, a mask that is not
// causal, or slots [first_slot, first_slot + rows) outside the cache.
absl::Status TreeAttention(const Context& ctx, const AttentionShape& shape, const float* q,
                           int64_t q_stride, const int32_t* parents, int64_t rows,
                           int64_t first_slot, const KvCache& kv, float* out, int64_t out_stride);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_ATTENTION_H_
