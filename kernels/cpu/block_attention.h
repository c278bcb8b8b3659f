// The drafter's attention: a block of queries over [context keys ; block keys], non-causal inside
// the block, with absolute positions (RoPE already applied by the caller).
#ifndef TWINSPAN_KERNELS_CPU_BLOCK_ATTENTION_H_
#define TWINSPAN_KERNELS_CPU_BLOCK_ATTENTION_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"

namespace twinspan::cpu {

struct BlockAttentionParams {
  int64_t block_rows = 0;        // B: queries, and the block's own keys
  int64_t context_rows = 0;      // Nc: cached context keys
  int64_t context_position = 0;  // absolute position of context row 0
  int64_t block_position = 0;    // absolute position of block row 0 (>= context end)
  int64_t n_heads = 0;           // nH
  int64_t n_kv_heads = 0;        // nKV; nH % nKV == 0 (GQA)
  int64_t head_dim = 0;          // D
  float scale = 0.0f;            // usually 1/sqrt(D)
  // Key visible from query when (!causal || k <= q) and, with a window W > 0,
  // q - k < W and (causal || k - q < W) -- HF's sliding-window rule, applied per query.
  bool causal = false;
  int64_t sliding_window = 0;  // 0: none
};

// out[b, h, :] = softmax_k(scale * q[b, h, :] . key[k, h / (nH / nKV), :]) . value[k, ...]
// over the visible keys, taken in position order (context rows, then block rows), so a query row's
// result does not depend on how many rows run with it.
// q, out: [B, nH * D]; context_k/v: [Nc, nKV * D]; block_k/v: [B, nKV * D].
// Errors: InvalidArgument naming the argument for a size that disagrees with `params`, overlapping
// context and block positions, or a query with no visible key.
absl::Status BlockAttention(std::span<float> out, std::span<const float> q,
                            std::span<const float> context_k, std::span<const float> context_v,
                            std::span<const float> block_k, std::span<const float> block_v,
                            const BlockAttentionParams& params);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_BLOCK_ATTENTION_H_
