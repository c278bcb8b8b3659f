// The keyed draws of the DFlash2 selector's sampled walk: one uniform per proposal, keyed by
// (seed, absolute position) like the target's sampler but on its own Philox stream, so the
// drafter's draws never repeat the verifier's.
#ifndef TWINSPAN_SERVICES_DRAFTER_WALK_UNIFORM_H_
#define TWINSPAN_SERVICES_DRAFTER_WALK_UNIFORM_H_

#include <cstdint>

namespace twinspan::drafter {

// Uniform in [0, 1) for the proposal at absolute `position`: 24 bits of
// Philox4x32-10(counter = {position lo, position hi, 0, 0x77616c6b "walk"}, key = {seed lo, hi})
// word 0, times 2^-24 (exact in float, never 1).
float WalkUniform(uint64_t seed, int64_t position);

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_DRAFTER_WALK_UNIFORM_H_
