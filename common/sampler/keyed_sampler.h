// The keyed sampler: one token from one row of logits, where the only randomness is a Philox draw
// keyed by (seed, absolute position). A row's token therefore never depends on the rows beside it,
// so drafted, plain, concurrent and repeated runs sample the same tokens.
#ifndef TWINSPAN_COMMON_SAMPLER_KEYED_SAMPLER_H_
#define TWINSPAN_COMMON_SAMPLER_KEYED_SAMPLER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace twinspan::sampler {

// OpenAI / vLLM request fields. Filters apply in HF's order: temperature, top_k, top_p, min_p.
struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy (argmax, lowest id on ties).
  int32_t top_k = 0;         // 0: off; else keep the k most likely ids.
  float top_p = 1.0f;        // 1: off; else keep the smallest most-likely set reaching top_p.
  float min_p = 0.0f;        // 0: off; else keep ids with p >= min_p * p_max.

  // InvalidArgument naming the field: temperature negative or not finite, top_k negative, top_p
  // outside (0, 1], min_p outside [0, 1].
  absl::Status Validate() const;
};

// The uniform draw in [0, 1) for (seed, position): 53 bits of
// Philox4x32-10(counter = {position lo, position hi, 0, 0x6b657973 "keys"}, key = {seed lo, seed
// hi}), words 0 and 1 as (w0 << 21) ^ (w1 >> 11), times 2^-53.
double KeyedUniform(uint64_t seed, int64_t position);

// Stateless and thread-safe.
class KeyedSampler {
 public:
  // Samples the token at absolute `position` (the position the new token will occupy) from
  // `logits` [vocab]. Greedy ignores seed and position. Otherwise, with z = logit / temperature and
  // w = exp(z - z_max) in double: top_k keeps the k ids first in (z descending, id ascending);
  // top_p keeps the shortest prefix in that order whose running w sum reaches top_p times the
  // top_k survivors' w sum (summed in id order); min_p drops w < min_p. The kept ids, in that
  // order when top_k or top_p is on, else by id, are walked until the running w sum exceeds
  // u * their w sum, u = KeyedUniform(seed, position). InvalidArgument for empty logits, a NaN
  // logit, or bad params.
  absl::StatusOr<int32_t> Sample(absl::Span<const float> logits, const SamplingParams& params,
                                 uint64_t seed, int64_t position) const;
};

// The seed of a request that gave none: FNV-1a 64 over the prompt ids as little-endian uint32,
// then the SplitMix64 finalizer. Reported in the reply so the run can be repeated.
uint64_t SeedFromPrompt(absl::Span<const int32_t> prompt);

}  // namespace twinspan::sampler

#endif  // TWINSPAN_COMMON_SAMPLER_KEYED_SAMPLER_H_
