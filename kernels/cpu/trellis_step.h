// One forward step of the trellis Viterbi (kernels/cpu/trellis_encode.h): the best cost of every
// out-edge after one more position. Internal to the encoder; the scalar step is the reference the
// AVX2 step must equal bit for bit.
#ifndef TWINSPAN_KERNELS_CPU_TRELLIS_STEP_H_
#define TWINSPAN_KERNELS_CPU_TRELLIS_STEP_H_

namespace twinspan::cpu::trellis {

// The edge arithmetic of K-bit codes over 16-bit states: state s = (k << state_shift) | e has
// out-edge e (its low 16 - K bits) and in-edge s >> K.
//
// A cost row holds one float per edge, with `pad` floats after every 2^in_shift edges: the step
// reads a row at stride 2^(16 - 2K) floats (1 KB..64 B for K = 3..6), and unpadded those reads all
// fall into one or two L1 sets and evict each other (K = 3 ran 2x slower).
struct StepShape {
  int bits = 0;         // K
  int codes = 0;        // 2^K: candidates k per out-edge
  int edges = 0;        // 2^(16 - K)
  int state_shift = 0;  // 16 - K
  int in_shift = 0;     // 16 - 2K: an in-edge is (k << in_shift) | g
  int pad = 0;          // Floats after each 2^in_shift edges of a row.
  int row_floats = 0;   // A cost row's length with its padding.

  static constexpr StepShape For(int bits) {
    const int edges = 1 << (16 - bits), in_shift = 16 - 2 * bits;
    const int pad = bits >= 3 && bits <= 6 ? 16 : 0;
    return StepShape{
        bits, 1 << bits, edges, 16 - bits, in_shift, pad, edges + (edges >> in_shift) * pad};
  }
  // Where edge e's cost sits in a row.
  constexpr int Index(int e) const { return e + (e >> in_shift) * pad; }
};

// The codebook as a step reads it: `values` [65536] by state, and `ordered` [65536], the same
// values in the order the step visits them (so a vector step streams through memory instead of
// striding by 2^(16 - K) floats, which puts every row in one L1 set).
struct StepTables {
  const float* values = nullptr;
  const float* ordered = nullptr;
};

// For each of `lanes` tiles t (1 or 2, sharing every table load): next[t][e] = min over k of
// fma(d, d, prev[t][s >> K]), d = values[s] - x[t], s = (k << (16 - K)) | e, for every out-edge e.
// prev[t] and next[t]: cost rows of StepShape::For(K) (indexed through Index()).
using StepFn = void (*)(const StepTables& tables, const float* x, const float* const* prev,
                        float* const* next);

struct Step {
  StepFn one = nullptr;   // One tile.
  StepFn pair = nullptr;  // Two tiles; each gets the bits `one` gives it.
  // Fills StepTables::ordered for these steps from `values`.
  void (*order)(const float* values, float* ordered) = nullptr;
};

// The plain loop, for K = 1..8 (reads `values` only).
Step ScalarStep(int bits);

// The fastest step this CPU runs (AVX2 + FMA when present, else ScalarStep), for K = 1..8.
Step FastStep(int bits);

}  // namespace twinspan::cpu::trellis

#endif  // TWINSPAN_KERNELS_CPU_TRELLIS_STEP_H_
