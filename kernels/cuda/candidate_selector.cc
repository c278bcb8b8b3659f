// Host side of SelectorWalk: the CPU op's shape check, the kernel's limits, the CPU op's checks of
// everything on the host (kernels/cpu/candidate_selector_check.h), then the launch
// (candidate_selector.cu).
#include "kernels/cuda/candidate_selector.cuh"

#include <cstdint>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cpu/candidate_selector_check.h"
#include "kernels/cuda/candidate_selector_launch.h"

namespace twinspan::cuda {
namespace {

namespace sk = selector_kernel;

// The launch arguments of the walk's and the table's common inputs.
sk::Args InputArgs(const cpu::SelectorWalkInputs& inputs, const cpu::SelectorWalkParams& params) {
  sk::Args args{};
  args.candidate_ids = inputs.candidate_ids.data();
  args.unary = inputs.unary.data();
  args.hidden_projection = inputs.hidden_projection.data();
  args.predecessor = inputs.predecessor.data;
  args.successor = inputs.successor.data;
  args.predecessor_bf16 = inputs.predecessor.type == cpu::CodebookType::kBF16;
  args.successor_bf16 = inputs.successor.type == cpu::CodebookType::kBF16;
  args.vocab = inputs.predecessor.rows;
  args.slots = static_cast<int>(params.slots);
  args.top_k = static_cast<int>(params.top_k);
  args.rank = static_cast<int>(params.rank);
  args.anchor_id = params.anchor_id;
  return args;
}

}  // namespace

absl::Status SelectorWalk(const Context& ctx, const cpu::SelectorWalkInputs& inputs,
                          const cpu::SelectorWalkOutputs& outputs,
                          const cpu::SelectorWalkParams& params) {
  ABSL_RETURN_IF_ERROR(cpu::CheckSelectorWalkShape(params));
  const int64_t s_count = params.slots, k = params.top_k, rank = params.rank;
  if (s_count > sk::kMaxSlots || k > sk::kThreads ||
      sk::SharedBytes(k, rank) > sk::kMaxSharedBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SelectorWalk: slots = %d (at most %d), top_k = %d (at most %d) or top_k x (rank + 1) + "
        "rank = %d floats (at most 48 KB) exceed the CUDA op",
        s_count, sk::kMaxSlots, k, sk::kThreads, k * (rank + 1) + rank));
  }
  ABSL_RETURN_IF_ERROR(
      cpu::CheckSelectorWalkArguments(inputs, outputs, params, cpu::SelectorWalkMemory::kDevice));
  const bool sampled = params.temperature > 0.0f;
  if (s_count == 0) return absl::OkStatus();
  if (!inputs.candidate_ids.data() || !inputs.unary.data() || !inputs.hidden_projection.data() ||
      !outputs.proposals.data() || !outputs.scores.data() ||
      (sampled && !outputs.probabilities.data())) {
    return absl::InvalidArgumentError(
        "SelectorWalk: candidate_ids, unary, hidden_projection and the outputs must be device "
        "memory");
  }

  sk::Args args = InputArgs(inputs, params);
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

absl::Status SelectorScoreTable(const Context& ctx, const cpu::SelectorWalkInputs& inputs,
                                std::span<float> table, const cpu::SelectorWalkParams& params) {
  ABSL_RETURN_IF_ERROR(cpu::CheckSelectorWalkShape(params));
  const int64_t s_count = params.slots, k = params.top_k, rank = params.rank;
  if (k > sk::kThreads || sk::SharedBytes(k, rank) > sk::kMaxSharedBytes ||
      s_count * k > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SelectorScoreTable: top_k = %d (at most %d) or top_k x (rank + 1) + rank = %d floats (at "
        "most 48 KB) exceed the CUDA op",
        k, sk::kThreads, k * (rank + 1) + rank));
  }
  ABSL_RETURN_IF_ERROR(cpu::CheckSelectorScoreTableArguments(inputs, table.size(), params,
                                                             cpu::SelectorWalkMemory::kDevice));
  if (s_count == 0) return absl::OkStatus();
  if (!inputs.candidate_ids.data() || !inputs.unary.data() || !inputs.hidden_projection.data() ||
      !table.data()) {
    return absl::InvalidArgumentError(
        "SelectorScoreTable: candidate_ids, unary, hidden_projection and the table must be device "
        "memory");
  }
  const sk::Args args = InputArgs(inputs, params);
  const cudaError_t e = sk::LaunchSelectorScoreTable(args, table.data(), ctx.stream);
  if (e != cudaSuccess) {
    return absl::InternalError(
        absl::StrFormat("SelectorScoreTable: launch failed: %s", cudaGetErrorString(e)));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cuda
