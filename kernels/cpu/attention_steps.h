// The inner steps of cpu::Attention (kernels/cpu/attention.h), one implementation per instruction
// set (cpu::Isa), each giving the bits of the scalar order below:
//   scores  s[k] = Dot(q, K[k], D) * scale (kernels/cpu/dot.h's order), k in chunk order;
//   max     m = fold of (m < s[k] ? s[k] : m) from -inf (a NaN score never becomes the max);
//   p[k]    = std::exp(s[k] - m); sum = ((0 + p[0]) + p[1]) + ...;
//   chunk   o[i] = ((0 + V[0][i] * p[0]) + V[1][i] * p[1]) + ...;
//   merge   M = max(run_max, m) as above; a = exp(run_max - M), b = exp(m - M);
//           run_sum = run_sum * a + sum * b; out[i] = out[i] * a + o[i] * b; run_max = M;
//   finish  out[i] = out[i] * (1 / run_sum).
// (A zero max's sign may differ from the scalar fold's; it only ever meets exp as exp(+-0) = 1.)
// kAvx2 vectorizes across keys for the scores and exp, and across dims for the rest, and its exp
// reproduces glibc's expf for x86-64 with FMA (the variant glibc picks wherever kAvx2 runs).
// Internal to kernels/cpu; tests call it to compare the two.
#ifndef TWINSPAN_KERNELS_CPU_ATTENTION_STEPS_H_
#define TWINSPAN_KERNELS_CPU_ATTENTION_STEPS_H_

#include <cstdint>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/kv_cache.h"

namespace twinspan::cpu::attention_steps {

// One query head's online-softmax state: its running max and sum, and its [D] output so far.
struct HeadState {
  float max = 0.0f;
  float sum = 0.0f;
  float* out = nullptr;
};

// One row's work on one chunk: `group` query heads (q: [group, D]) over n keys and values
// ([n, D] each, consecutive positions) that all of them see.
struct RowChunk {
  const float* q = nullptr;
  const float* keys = nullptr;
  const float* values = nullptr;
  int64_t n = 0;
  int64_t group = 0;
  int64_t head_dim = 0;
  float scale = 0.0f;
};

// Floats of scratch AttendRowChunk needs for a group of `group` heads of head_dim D.
inline int64_t RowChunkScratchFloats(int64_t group, int64_t head_dim, int64_t chunk) {
  return group * (chunk + head_dim);
}

// keys / values [count, D] = kv head `head` of positions [first, first + count), as floats.
// REQUIRES: as KvCache::ReadKeys.
void ReadChunk(Isa isa, const KvCache& kv, int64_t first, int64_t count, int64_t head, float* keys,
               float* values);

// Starts a head's state: max -inf, sum 0, out zeros.
void StartHead(int64_t head_dim, HeadState& state);

// Merges one chunk into each of the group's states (states[g] for query head g); `scratch` holds
// RowChunkScratchFloats(group, D, n) floats. REQUIRES: c.n >= 1.
void AttendRowChunk(Isa isa, const RowChunk& c, HeadState* states, float* scratch);

// out[i] = state.out[i] * (1 / state.sum) for i < D.
void FinishHead(Isa isa, const HeadState& state, int64_t head_dim, float* out);

#if defined(__x86_64__)
// The kAvx2 steps (attention_steps_avx2.cc). REQUIRES: HasAvx2(BestIsa()).
void ReadChunkAvx2(const KvCache& kv, int64_t first, int64_t count, int64_t head, float* keys,
                   float* values);
void AttendRowChunkAvx2(const RowChunk& c, HeadState* states, float* scratch);
void FinishHeadAvx2(const HeadState& state, int64_t head_dim, float* out);
// Pieces of the kAvx2 step that the kAvx512 one shares: the chunk max, p = exp(s - max) in place,
// and the merge of a chunk's [D] output, max and sum into a head's state.
float ChunkMaxAvx2(const float* s, int64_t n);
void ProbabilitiesAvx2(float* s, int64_t n, float m);
void MergeChunkAvx2(const float* o, float chunk_max, float chunk_sum, int64_t d, HeadState& st);
// The kAvx512 step (attention_steps_avx512.cc): scores two keys a 16-lane register, P.V sixteen
// dims a register. REQUIRES: BestIsa() == Isa::kAvx512.
void AttendRowChunkAvx512(const RowChunk& c, HeadState* states, float* scratch);
#endif

}  // namespace twinspan::cpu::attention_steps

#endif  // TWINSPAN_KERNELS_CPU_ATTENTION_STEPS_H_
