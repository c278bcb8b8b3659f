// DFlash2's pairwise candidate selector: a sequential walk over each slot's top-k candidates.
#ifndef TWINSPAN_KERNELS_CPU_CANDIDATE_SELECTOR_H_
#define TWINSPAN_KERNELS_CPU_CANDIDATE_SELECTOR_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

// Checkpoints store the codebooks as bf16 [V, rank]; rows are gathered, never multiplied whole.
enum class CodebookType { kF32, kBF16 };

struct CodebookView {
  CodebookType type = CodebookType::kF32;
  const std::byte* data = nullptr;  // [rows, rank], row-major, owned by the caller.
  int64_t rows = 0;                 // V
  int64_t rank = 0;                 // r
};

struct SelectorWalkParams {
  int64_t slots = 0;  // S = B - 1 proposals
  int64_t top_k = 0;  // k candidates per slot
  int64_t rank = 0;   // r
  int32_t anchor_id = 0;
  // 0 walks greedily; > 0 samples each slot from softmax(score / temperature).
  float temperature = 0.0f;
};

struct SelectorWalkInputs {
  std::span<const int32_t> candidate_ids;    // [S, k] global token ids
  std::span<const float> unary;              // [S, k] their logits
  std::span<const float> hidden_projection;  // [S, r]
  CodebookView predecessor;                  // [V, r]
  CodebookView successor;                    // [V, r]
  std::span<const float> uniforms;           // [S] draws in [0, 1); empty when greedy
};

struct SelectorWalkOutputs {
  std::span<int32_t> proposals;  // [S] chosen token ids
  std::span<float> scores;       // [S, k] unary + <pred[prev] * hp[s], succ[cand]>, prev as walked
  std::span<float> probabilities;  // [S, k] softmax(score / T) when sampled; may be empty if greedy
};

// Walks s = 0..S-1 from prev = anchor_id: scores every candidate of slot s, picks the argmax
// (greedy; ties keep the lower candidate index) or the candidate where the cumulative softmax
// first exceeds uniforms[s] (sampled), and makes it prev for slot s + 1.
// Errors: InvalidArgument naming the argument for a size that disagrees with `params`, a
// candidate or anchor id outside [0, V), codebooks of different shapes, temperature < 0, or a
// sampled walk without one uniform in [0, 1) per slot. Sequential by nature: ctx is unused.
absl::Status SelectorWalk(const Context& ctx, const SelectorWalkInputs& inputs,
                          const SelectorWalkOutputs& outputs, const SelectorWalkParams& params);

// Every score a walk could meet, for a tree of drafts (DFlash2's best-first tree):
//   table[s, i, j] = unary[s, j] + <predecessor[p] * hidden_projection[s], successor[c_j]>
// where c_j = candidate_ids[s, j] and p = candidate_ids[s - 1, i] (the anchor for slot 0, whose k
// rows are alike): candidate j's score after candidate i. The sums run as SelectorWalk's, so the
// walk's scores are the table's entries along its path, bit for bit. table: [S, k, k].
// Errors: as SelectorWalk's (temperature and uniforms aside), and InvalidArgument for a table that
// is not S * k * k floats.
absl::Status SelectorScoreTable(const Context& ctx, const SelectorWalkInputs& inputs,
                                std::span<float> table, const SelectorWalkParams& params);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_CANDIDATE_SELECTOR_H_
