#include "services/drafter/walk_uniform.h"

#include "common/sampler/philox.h"

namespace twinspan::drafter {

float WalkUniform(uint64_t seed, int64_t position) {
  constexpr uint32_t kWalkStream = 0x77616c6b;  // "walk"
  const uint64_t p = static_cast<uint64_t>(position);
  const sampler::PhiloxCounter out = sampler::Philox4x32(
      {static_cast<uint32_t>(p), static_cast<uint32_t>(p >> 32), 0u, kWalkStream},
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  return static_cast<float>(out[0] >> 8) * 0x1p-24f;
}

}  // namespace twinspan::drafter
