// The recurrent ops (causal conv1d, Gated DeltaNet) read a start state and write an end state, in
// place or to a disjoint buffer; both backends reject the states in between with this one test.
#ifndef TWINSPAN_KERNELS_CPU_STATE_OVERLAP_H_
#define TWINSPAN_KERNELS_CPU_STATE_OVERLAP_H_

#include <cstdint>

namespace twinspan::cpu {

// True when the n floats at a and at b share memory but do not start together.
inline bool StatesPartlyOverlap(const float* a, const float* b, int64_t n) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  const auto bytes = static_cast<uintptr_t>(n) * sizeof(float);
  return x != y && x < y + bytes && y < x + bytes;
}

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_STATE_OVERLAP_H_
