// Structured output's mask on a batch of logits rows: ids the grammar does not allow next become
// -inf, so the keyed sampler (greedy or sampled) can only draw allowed ids, with the same draw u
// as an unmasked row at that position.
#ifndef TWINSPAN_KERNELS_CPU_MASK_LOGITS_H_
#define TWINSPAN_KERNELS_CPU_MASK_LOGITS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

// Words of one row's mask: bit (id % 32) of word id / 32 allows id.
inline int64_t MaskWords(int64_t vocab) { return (vocab + 31) / 32; }

// logits[r * stride + i] = -inf for every i < vocab whose bit in row r's mask
// (allowed + r * MaskWords(vocab)) is clear, for r < rows; other values are left as they are.
// InvalidArgument for vocab < 1, stride < vocab, rows < 0 or a null pointer with rows > 0.
absl::Status MaskLogits(const Context& ctx, float* logits, int64_t stride, int64_t vocab,
                        const uint32_t* allowed, int64_t rows);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_MASK_LOGITS_H_
