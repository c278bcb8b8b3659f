// Philox4x32-10, the counter-based generator of Salmon et al., "Parallel Random Numbers: As Easy
// as 1, 2, 3" (SC'11): a pure function of (counter, key), so any draw is computed independently of
// every other. Checked against Random123's published known-answer vectors.
#ifndef TWINSPAN_COMMON_SAMPLER_PHILOX_H_
#define TWINSPAN_COMMON_SAMPLER_PHILOX_H_

#include <array>
#include <cstdint>

namespace twinspan::sampler {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// Ten rounds of the Philox 4x32 bijection of `counter` under `key`.
constexpr PhiloxCounter Philox4x32(PhiloxCounter counter, PhiloxKey key) {
  constexpr uint32_t kMultiplier0 = 0xD2511F53u;
  constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // Key schedule increments (golden ratio, sqrt(3)-1).
  constexpr uint32_t kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    const uint64_t product0 = static_cast<uint64_t>(kMultiplier0) * counter[0];
    const uint64_t product1 = static_cast<uint64_t>(kMultiplier1) * counter[2];
    const uint32_t hi0 = static_cast<uint32_t>(product0 >> 32),
                   lo0 = static_cast<uint32_t>(product0);
    const uint32_t hi1 = static_cast<uint32_t>(product1 >> 32),
                   lo1 = static_cast<uint32_t>(product1);
    counter = {hi1 ^ counter[1] ^ key[0], lo1, hi0 ^ counter[3] ^ key[1], lo0};
  }
  return counter;
}

}  // namespace twinspan::sampler

#endif  // TWINSPAN_COMMON_SAMPLER_PHILOX_H_
