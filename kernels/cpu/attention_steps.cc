#include "kernels/cpu/attention_steps.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/dot.h"

namespace twinspan::cpu::attention_steps {
namespace {

void AttendRowChunkPortable(const RowChunk& c, HeadState* states, float* scratch) {
  const int64_t d = c.head_dim, n = c.n;
  float* scores = scratch;                   // [group, n]
  float* chunk_out = scratch + c.group * n;  // [group, D]
  for (int64_t g = 0; g < c.group; ++g) {
    const float* q = c.q + g * d;
    float* s = scores + g * n;
    float chunk_max = -std::numeric_limits<float>::infinity();
    for (int64_t k = 0; k < n; ++k) {
      s[k] = Dot(q, c.keys + k * d, d) * c.scale;
      chunk_max = std::max(chunk_max, s[k]);
    }
    float chunk_sum = 0.0f;
    float* o = chunk_out + g * d;
    std::fill(o, o + d, 0.0f);
    for (int64_t k = 0; k < n; ++k) {
      const float p = std::exp(s[k] - chunk_max);
      chunk_sum += p;
      const float* v = c.values + k * d;
      for (int64_t i = 0; i < d; ++i) o[i] = o[i] + v[i] * p;
    }
    HeadState& st = states[g];
    const float new_max = std::max(st.max, chunk_max);
    const float old_scale = std::exp(st.max - new_max);  // 0 for the first chunk.
    const float chunk_scale = std::exp(chunk_max - new_max);
    st.sum = st.sum * old_scale + chunk_sum * chunk_scale;
    for (int64_t i = 0; i < d; ++i) st.out[i] = st.out[i] * old_scale + o[i] * chunk_scale;
    st.max = new_max;
  }
}

void FinishHeadPortable(const HeadState& state, int64_t head_dim, float* out) {
  const float inv_sum = 1.0f / state.sum;
  for (int64_t i = 0; i < head_dim; ++i) out[i] = state.out[i] * inv_sum;
}

}  // namespace

void StartHead(int64_t head_dim, HeadState& state) {
  state.max = -std::numeric_limits<float>::infinity();
  state.sum = 0.0f;
  std::fill(state.out, state.out + head_dim, 0.0f);
}

// Each step calls its kAvx2 (or kAvx512) form only where one is built (x86-64) and asked for.
void ReadChunk([[maybe_unused]] Isa isa, const KvCache& kv, int64_t first, int64_t count,
               int64_t head, float* keys, float* values) {
#if defined(__x86_64__)
  if (HasAvx2(isa)) return ReadChunkAvx2(kv, first, count, head, keys, values);
#endif
  kv.ReadKeys(first, count, head, keys);
  kv.ReadValues(first, count, head, values);
}

void AttendRowChunk([[maybe_unused]] Isa isa, const RowChunk& c, HeadState* states,
                    float* scratch) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx512) return AttendRowChunkAvx512(c, states, scratch);
  if (HasAvx2(isa)) return AttendRowChunkAvx2(c, states, scratch);
#endif
  AttendRowChunkPortable(c, states, scratch);
}

void FinishHead([[maybe_unused]] Isa isa, const HeadState& state, int64_t head_dim, float* out) {
#if defined(__x86_64__)
  if (HasAvx2(isa)) return FinishHeadAvx2(state, head_dim, out);
#endif
  FinishHeadPortable(state, head_dim, out);
}

}  // namespace twinspan::cpu::attention_steps
