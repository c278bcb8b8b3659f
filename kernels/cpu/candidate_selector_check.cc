#include "kernels/cpu/candidate_selector_check.h"

#include <cstddef>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace twinspan::cpu {
namespace {

absl::Status CheckCodebook(const CodebookView& book, const char* name, int64_t rank,
                           SelectorWalkMemory memory) {
  const bool device = memory == SelectorWalkMemory::kDevice;
  const size_t align = book.type == CodebookType::kF32 ? 4 : 2;
  if (book.data == nullptr || book.rows <= 0 || book.rank != rank ||
      (device && reinterpret_cast<uintptr_t>(book.data) % align != 0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SelectorWalk: %s codebook is [%d, %d], expected [V > 0, rank = %d]%s", name, book.rows,
        book.rank, rank, device ? " in aligned device memory" : ""));
  }
  return absl::OkStatus();
}

// The codebooks, the anchor and (kHost) the candidate ids: what the walk and the table share.
absl::Status CheckSelectorInputs(const SelectorWalkInputs& inputs, const SelectorWalkParams& params,
                                 SelectorWalkMemory memory) {
  const int64_t s_count = params.slots, k = params.top_k, rank = params.rank;
  for (const CodebookView* book : {&inputs.predecessor, &inputs.successor}) {
    ABSL_RETURN_IF_ERROR(CheckCodebook(
        *book, book == &inputs.predecessor ? "predecessor" : "successor", rank, memory));
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
  for (int64_t i = 0; memory == SelectorWalkMemory::kHost && i < s_count * k; ++i) {
    const int32_t id = inputs.candidate_ids[i];
    if (id < 0 || id >= vocab) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "SelectorWalk: candidate id %d (slot %d) is outside [0, %d)", id, i / k, vocab));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSelectorWalkShape(const SelectorWalkParams& params) {
  const int64_t s_count = params.slots, k = params.top_k, rank = params.rank;
  if (s_count < 0 || k <= 0 || rank <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SelectorWalk: slots = %d, top_k = %d, rank = %d must be >= 0, > 0, > 0",
                        s_count, k, rank));
  }
  return absl::OkStatus();
}

absl::Status CheckSelectorWalkArguments(const SelectorWalkInputs& inputs,
                                        const SelectorWalkOutputs& outputs,
                                        const SelectorWalkParams& params,
                                        SelectorWalkMemory memory) {
  const int64_t s_count = params.slots, k = params.top_k, rank = params.rank;
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
  ABSL_RETURN_IF_ERROR(CheckSelectorInputs(inputs, params, memory));
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
  return absl::OkStatus();
}

absl::Status CheckSelectorScoreTableArguments(const SelectorWalkInputs& inputs, size_t table_size,
                                              const SelectorWalkParams& params,
                                              SelectorWalkMemory memory) {
  const int64_t s_count = params.slots, k = params.top_k, rank = params.rank;
  const auto size_is = [](size_t got, int64_t want) { return static_cast<int64_t>(got) == want; };
  if (!size_is(inputs.candidate_ids.size(), s_count * k) ||
      !size_is(inputs.unary.size(), s_count * k) ||
      !size_is(inputs.hidden_projection.size(), s_count * rank)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SelectorScoreTable: candidate_ids/unary/hidden_projection have %d/%d/%d values, "
        "expected [%d, %d]/[%d, %d]/[%d, %d]",
        inputs.candidate_ids.size(), inputs.unary.size(), inputs.hidden_projection.size(), s_count,
        k, s_count, k, s_count, rank));
  }
  ABSL_RETURN_IF_ERROR(CheckSelectorInputs(inputs, params, memory));
  if (!size_is(table_size, s_count * k * k)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SelectorScoreTable: the table has %d entries, expected [%d, %d, %d]",
                        table_size, s_count, k, k));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
