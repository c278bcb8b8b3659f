// Host side of SelectorWalk: the CPU op's checks of everything on the host, the kernel's limits,
// then the launch (candidate_selector.cu).
#include "kernels/cuda/candidate_selector.cuh"

#include <cstdint>

#include "absl/strings/str_format.h"
#include "kernels/cuda/candidate_selector_launch.h"

namespace twinspan::cuda {
namespace {

namespace sk = selector_kernel;

absl::Status CheckCodebook(const cpu::CodebookView& book, const char* name, int64_t rank) {
  const size_t align = book.type == cpu::CodebookType::kF32 ? 4 : 2;
  if (book.data == nullptr || book.rows <= 0 || book.rank != rank ||
      reinterpret_cast<uintptr_t>(book.data) % align != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SelectorWalk: %s codebook is [%d, %d], expected [V > 0, rank = %d] in aligned device "
        "memory",
        name, book.rows, book.rank, rank));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SelectorWalk(const Context& ctx, const cpu::SelectorWalkInputs& inputs,
                          const cpu::SelectorWalkOutputs& outputs,
                          const cpu::SelectorWalkParams& params) {
  const int64_t s_count = params.slots, k = params.top_k, rank = params.rank;
  if (s_count < 0 || k <= 0 || rank <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SelectorWalk: slots = %d, top_k = %d, rank = %d must be >= 0, > 0, > 0",
                        s_count, k, rank));
  }
  if (s_count > sk::kMaxSlots || k > sk::kThreads ||
      sk::SharedBytes(k, rank) > sk::kMaxSharedBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SelectorWalk: slots = %d (at most %d), top_k = %d (at most %d) or top_k x (rank + 1) + "
        "rank = %d floats (at most 48 KB) exceed the CUDA op",
        s_count, sk::kMaxSlots, k, sk::kThreads, k * (rank + 1) + rank));
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
  for (const cpu::CodebookView* book : {&inputs.predecessor, &inputs.successor}) {
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
  if (s_count == 0) return absl::OkStatus();
  if (!inputs.candidate_ids.data() || !inputs.unary.data() || !inputs.hidden_projection.data() ||
      !outputs.proposals.data() || !outputs.scores.data() ||
      (sampled && !outputs.probabilities.data())) {
    return absl::InvalidArgumentError(
        "SelectorWalk: candidate_ids, unary, hidden_projection and the outputs must be device "
        "memory");
  }

  sk::Args args{};
  args.candidate_ids = inputs.candidate_ids.data();
  args.unary = inputs.unary.data();
  args.hidden_projection = inputs.hidden_projection.data();
  args.predecessor = inputs.predecessor.data;
  args.successor = inputs.successor.data;
  args.predecessor_bf16 = inputs.predecessor.type == cpu::CodebookType::kBF16;
  args.successor_bf16 = inputs.successor.type == cpu::CodebookType::kBF16;
  args.vocab = vocab;
  args.slots = static_cast<int>(s_count);
  args.top_k = static_cast<int>(k);
  args.rank = static_cast<int>(rank);
  args.anchor_id = params.anchor_id;
  args.temperature = params.temperature;
  for (int64_t s = 0; sampled && s < s_count; ++s) args.uniforms[s] = inputs.uniforms[s];
  args.proposals = outputs.proposals.data();
  args.scores = outputs.scores.data();
  args.probabilities = sampled ? outputs.probabilities.data() : nullptr;
  const cudaError_t e = sk::LaunchSelectorWalk(args, ctx.stream);
  if (e != cudaSuccess) {
    return absl::InternalError(
        absl::StrFormat("SelectorWalk: launch failed: %s", cudaGetErrorString(e)));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cuda
