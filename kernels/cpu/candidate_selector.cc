#include "kernels/cpu/candidate_selector.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"

namespace twinspan::cpu {
namespace {

absl::Status CheckCodebook(const CodebookView& book, const char* name, int64_t rank) {
  if (book.data == nullptr || book.rows <= 0 || book.rank != rank) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SelectorWalk: %s codebook is [%d, %d], expected [V > 0, rank = %d]", name,
                        book.rows, book.rank, rank));
  }
  return absl::OkStatus();
}

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
  const int64_t s_count = params.slots, k = params.top_k, rank = params.rank;
  if (s_count < 0 || k <= 0 || rank <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SelectorWalk: slots = %d, top_k = %d, rank = %d must be >= 0, > 0, > 0",
                        s_count, k, rank));
  }
  if (!(params.temperature >= 0.0f)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SelectorWalk: temperature = %f must be >= 0", params.temperature));
  }
  const bool sampled = params.temperature > 0.0f;
  const auto size_is = [](size_t got, int64_t want) { return static_cast<int64_t>(got) == want; };
  if (!size_is(inputs.candidate_ids.size(), s_count * k) ||
      !size_is(inputs.unary.size(), s_count * k) ||
      !size_is(inputs.hidden_projection.size(), s_count * rank)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SelectorWalk: candidate_ids/unary/hidden_projection have %d/%d/%d values, expected "
        "[%d, %d]/[%d, %d]/[%d, %d]",
        inputs.candidate_ids.size(), inputs.unary.size(), inputs.hidden_projection.size(), s_count,
        k, s_count, k, s_count, rank));
  }
  if (!size_is(outputs.proposals.size(), s_count) || !size_is(outputs.scores.size(), s_count * k) ||
      (sampled && !size_is(outputs.probabilities.size(), s_count * k))) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SelectorWalk: proposals/scores/probabilities have %d/%d/%d entries, expected %d/%d/%d",
        outputs.proposals.size(), outputs.scores.size(), outputs.probabilities.size(), s_count,
        s_count * k, sampled ? s_count * k : 0));
  }
  for (const CodebookView* book : {&inputs.predecessor, &inputs.successor}) {
    const absl::Status status =
        CheckCodebook(*book, book == &inputs.predecessor ? "predecessor" : "successor", rank);
    if (!status.ok()) return status;
  }
  if (inputs.predecessor.rows != inputs.successor.rows) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SelectorWalk: predecessor codebook has %d rows, successor %d",
                        inputs.predecessor.rows, inputs.successor.rows));
  }
  const int64_t vocab = inputs.predecessor.rows;
  if (params.anchor_id < 0 || params.anchor_id >= vocab) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SelectorWalk: anchor id %d is outside [0, %d)", params.anchor_id, vocab));
  }
  for (int64_t i = 0; i < s_count * k; ++i) {
    const int32_t id = inputs.candidate_ids[i];
    if (id < 0 || id >= vocab) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "SelectorWalk: candidate id %d (slot %d) is outside [0, %d)", id, i / k, vocab));
    }
  }
  if (sampled) {
    if (!size_is(inputs.uniforms.size(), s_count)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("SelectorWalk: a sampled walk needs %d uniforms, got %d", s_count,
                          inputs.uniforms.size()));
    }
    for (int64_t s = 0; s < s_count; ++s) {
      const float u = inputs.uniforms[s];
      if (!(u >= 0.0f && u < 1.0f)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("SelectorWalk: uniform %d = %f is outside [0, 1)", s, u));
      }
    }
  }

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

}  // namespace twinspan::cpu
