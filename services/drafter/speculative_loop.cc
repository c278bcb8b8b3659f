#include "services/drafter/speculative_loop.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace twinspan::drafter {
namespace {

int32_t Argmax(const float* row, int64_t n) {
  return static_cast<int32_t>(std::max_element(row, row + n) - row);
}

absl::Status CheckRequest(absl::Span<const int32_t> prompt, int64_t max_new_tokens) {
  if (prompt.empty() || max_new_tokens < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "speculative loop: prompt of %d tokens, max_new_tokens %d", prompt.size(), max_new_tokens));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> GreedyGenerate(const target::TargetModel& target,
                                                    absl::Span<const int32_t> prompt,
                                                    int64_t max_new_tokens) {
  ABSL_RETURN_IF_ERROR(CheckRequest(prompt, max_new_tokens));
  const int64_t vocab = target.config().vocab_size;
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::SequenceState> state, target.NewSequence());
  ABSL_ASSIGN_OR_RETURN(target::ForwardResult prefill,
                        target::Prefill(target, *state, prompt, 512, {}));
  std::vector<int32_t> out = {Argmax(prefill.logits.data(), vocab)};
  while (static_cast<int64_t>(out.size()) < max_new_tokens) {
    target::ForwardResult step;
    const int32_t token = out.back();
    ABSL_RETURN_IF_ERROR(target.Forward(*state, {.tokens = absl::MakeConstSpan(&token, 1)}, &step));
    ABSL_RETURN_IF_ERROR(target.Commit(*state, 1));
    out.push_back(Argmax(step.logits.data(), vocab));
  }
  return out;
}

absl::StatusOr<SpeculativeResult> GreedySpeculativeGenerate(const target::TargetModel& target,
                                                            const Drafter& drafter,
                                                            absl::Span<const int32_t> prompt,
                                                            int64_t max_new_tokens,
                                                            int64_t block_size) {
  ABSL_RETURN_IF_ERROR(CheckRequest(prompt, max_new_tokens));
  const int64_t vocab = target.config().vocab_size;
  const std::vector<int64_t>& taps = drafter.config().target_layer_ids;
  const int64_t b = block_size == 0 ? drafter.config().block_size : block_size;
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::SequenceState> state, target.NewSequence());
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<DraftStream> stream, drafter.NewStream());
  ABSL_ASSIGN_OR_RETURN(target::ForwardResult prefill,
                        target::Prefill(target, *state, prompt, 512, taps));
  ABSL_RETURN_IF_ERROR(drafter.AppendTaps(*stream, TapForm::kRaw, prefill.taps,
                                          static_cast<int64_t>(prompt.size())));

  SpeculativeResult result;
  result.output_ids = {Argmax(prefill.logits.data(), vocab)};
  while (static_cast<int64_t>(result.output_ids.size()) < max_new_tokens) {
    const int64_t remaining = max_new_tokens - static_cast<int64_t>(result.output_ids.size());
    const int64_t verify_size = std::min(b, remaining + 1);
    const int32_t pending = result.output_ids.back();
    ABSL_ASSIGN_OR_RETURN(Proposal proposal,
                          drafter.Propose(*stream, pending, {.block_size = verify_size}));
    std::vector<int32_t> window = {pending};
    window.insert(window.end(), proposal.ids.begin(), proposal.ids.end());
    target::ForwardResult verify;
    ABSL_RETURN_IF_ERROR(target.Forward(
        *state, {.tokens = window, .logits = target::LogitsRows::kAll, .tap_layer_ids = taps},
        &verify));
    // Accept while draft i equals the target's argmax after row i; the bonus is the next argmax.
    int64_t accepted = 0;
    while (accepted < static_cast<int64_t>(proposal.ids.size()) &&
           proposal.ids[accepted] == Argmax(verify.logits.data() + accepted * vocab, vocab)) {
      ++accepted;
    }
    const int32_t bonus = Argmax(verify.logits.data() + accepted * vocab, vocab);
    const int64_t produced = std::min(accepted + 1, remaining);
    for (int64_t i = 0; i < produced; ++i) {
      result.output_ids.push_back(i < accepted ? proposal.ids[i] : bonus);
    }
    // The kept rows are the old pending and the accepted drafts: the target keeps their KV, the
    // drafter their taps.
    ABSL_RETURN_IF_ERROR(target.Commit(*state, produced));
    const int64_t width = static_cast<int64_t>(taps.size()) * target.config().hidden_size;
    ABSL_RETURN_IF_ERROR(
        drafter.AppendTaps(*stream, TapForm::kRaw,
                           std::span<const float>(verify.taps.data(), produced * width), produced));
    result.accept_lengths.push_back(produced);
    result.round_anchors.push_back(pending);
    result.round_proposals.push_back(std::move(proposal.ids));
  }
  return result;
}

}  // namespace twinspan::drafter
