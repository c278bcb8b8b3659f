#include "kernels/cpu/candidate_selector.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/status.h"
#include "kernels/cpu/candidate_selector_check.h"

namespace twinspan::cpu {
namespace {

// Copies codebook row `id` to `row` as floats (bf16 widens exactly).
void GatherRow(const CodebookView& book, int64_t id, float* row) {
  if (book.type == CodebookType::kF32) {
    std::memcpy(row, book.data + id * book.rank * sizeof(float), book.rank * sizeof(float));
    return;
  }
  const std::byte* src = book.data + id * book.rank * sizeof(uint16_t);
  for (int64_t r = 0; r < book.rank; ++r) {
    uint16_t bits;
    std::memcpy(&bits, src + r * sizeof(uint16_t), sizeof(bits));
    row[r] = std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
  }
}

}  // namespace

absl::Status SelectorWalk(const Context& /*ctx*/, const SelectorWalkInputs& inputs,
                          const SelectorWalkOutputs& outputs, const SelectorWalkParams& params) {
  ABSL_RETURN_IF_ERROR(CheckSelectorWalkShape(params));
  ABSL_RETURN_IF_ERROR(
      CheckSelectorWalkArguments(inputs, outputs, params, SelectorWalkMemory::kHost));
  const int64_t s_count = params.slots, k = params.top_k, rank = params.rank;
  const bool sampled = params.temperature > 0.0f;

  std::vector<float> gated(rank), successor(rank);
  int32_t prev = params.anchor_id;
  for (int64_t s = 0; s < s_count; ++s) {
    GatherRow(inputs.predecessor, prev, gated.data());
    const float* hp = inputs.hidden_projection.data() + s * rank;
    for (int64_t r = 0; r < rank; ++r) gated[r] *= hp[r];
    float* scores = outputs.scores.data() + s * k;
    for (int64_t c = 0; c < k; ++c) {
      GatherRow(inputs.successor, inputs.candidate_ids[s * k + c], successor.data());
      float edge = 0.0f;
      for (int64_t r = 0; r < rank; ++r) edge += gated[r] * successor[r];
      scores[c] = inputs.unary[s * k + c] + edge;
    }
    int64_t chosen = 0;
    if (!sampled) {
      for (int64_t c = 1; c < k; ++c) {
        if (scores[c] > scores[chosen]) chosen = c;
      }
    } else {
      float* probs = outputs.probabilities.data() + s * k;
      float max_scaled = -INFINITY;
      for (int64_t c = 0; c < k; ++c)
        max_scaled = std::fmax(max_scaled, scores[c] / params.temperature);
      float total = 0.0f;
      for (int64_t c = 0; c < k; ++c) {
        probs[c] = std::exp(scores[c] / params.temperature - max_scaled);
        total += probs[c];
      }
      for (int64_t c = 0; c < k; ++c) probs[c] /= total;
      // Inverse CDF; the last candidate takes any rounding shortfall of the cumulative sum.
      chosen = k - 1;
      float cumulative = 0.0f;
      for (int64_t c = 0; c < k; ++c) {
        cumulative += probs[c];
        if (inputs.uniforms[s] < cumulative) {
          chosen = c;
          break;
        }
      }
    }
    prev = inputs.candidate_ids[s * k + chosen];
    outputs.proposals[s] = prev;
  }
  return absl::OkStatus();
}

absl::Status SelectorScoreTable(const Context& ctx, const SelectorWalkInputs& inputs,
                                std::span<float> table, const SelectorWalkParams& params) {
  ABSL_RETURN_IF_ERROR(CheckSelectorWalkShape(params));
  ABSL_RETURN_IF_ERROR(
      CheckSelectorScoreTableArguments(inputs, table.size(), params, SelectorWalkMemory::kHost));
  const int64_t k = params.top_k, rank = params.rank;
  ParallelFor(ctx.pool, params.slots * k, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> gated(rank), successor(rank);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t s = t / k, i = t % k;
      const int32_t prev = s == 0 ? params.anchor_id : inputs.candidate_ids[(s - 1) * k + i];
      GatherRow(inputs.predecessor, prev, gated.data());
      const float* hp = inputs.hidden_projection.data() + s * rank;
      for (int64_t r = 0; r < rank; ++r) gated[r] *= hp[r];
      float* scores = table.data() + (s * k + i) * k;
      for (int64_t c = 0; c < k; ++c) {
        GatherRow(inputs.successor, inputs.candidate_ids[s * k + c], successor.data());
        float edge = 0.0f;
        for (int64_t r = 0; r < rank; ++r) edge += gated[r] * successor[r];
        scores[c] = inputs.unary[s * k + c] + edge;
      }
    }
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
