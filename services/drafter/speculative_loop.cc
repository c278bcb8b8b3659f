#include "services/drafter/speculative_loop.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace twinspan::drafter {
namespace {

absl::Status CheckRequest(absl::Span<const int32_t> prompt, int64_t max_new_tokens) {
  if (prompt.empty() || max_new_tokens < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "speculative loop: prompt of %d tokens, max_new_tokens %d", prompt.size(), max_new_tokens));
  }
  return absl::OkStatus();
}

// The token at absolute `position`, from the logits row that predicts it.
absl::StatusOr<int32_t> SampleRow(const float* row, int64_t vocab,
                                  const sampler::SamplingParams& sampling, uint64_t seed,
                                  int64_t position) {
  return sampler::KeyedSampler().Sample(absl::MakeConstSpan(row, vocab), sampling, seed, position);
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> PlainGenerate(const target::TargetModel& target,
                                                   absl::Span<const int32_t> prompt,
                                                   int64_t max_new_tokens,
                                                   const sampler::SamplingParams& sampling,
                                                   uint64_t seed) {
  ABSL_RETURN_IF_ERROR(CheckRequest(prompt, max_new_tokens));
  const int64_t vocab = target.config().vocab_size;
  const int64_t p = static_cast<int64_t>(prompt.size());
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::SequenceState> state, target.NewSequence());
  ABSL_ASSIGN_OR_RETURN(target::ForwardResult prefill,
                        target::Prefill(target, *state, prompt, 512, {}));
  ABSL_ASSIGN_OR_RETURN(const int32_t first,
                        SampleRow(prefill.logits.data(), vocab, sampling, seed, p));
  std::vector<int32_t> out = {first};
  while (static_cast<int64_t>(out.size()) < max_new_tokens) {
    target::ForwardResult step;
    const int32_t token = out.back();
    ABSL_RETURN_IF_ERROR(target.Forward(*state, {.tokens = absl::MakeConstSpan(&token, 1)}, &step));
    ABSL_RETURN_IF_ERROR(target.Commit(*state, 1));
    ABSL_ASSIGN_OR_RETURN(const int32_t next, SampleRow(step.logits.data(), vocab, sampling, seed,
                                                        p + static_cast<int64_t>(out.size())));
    out.push_back(next);
  }
  return out;
}

absl::StatusOr<SpeculativeResult> SpeculativeGenerate(const target::TargetModel& target,
                                                      const Drafter& drafter,
                                                      absl::Span<const int32_t> prompt,
                                                      int64_t max_new_tokens,
                                                      const SpeculativeOptions& options) {
  ABSL_RETURN_IF_ERROR(CheckRequest(prompt, max_new_tokens));
  ABSL_RETURN_IF_ERROR(options.sampling.Validate());
  const int64_t vocab = target.config().vocab_size;
  const int64_t p = static_cast<int64_t>(prompt.size());
  const std::vector<int64_t>& taps = drafter.config().target_layer_ids;
  const int64_t tap_width = static_cast<int64_t>(taps.size()) * target.config().hidden_size;
  const int64_t b = options.block_size == 0 ? drafter.config().block_size : options.block_size;
  const bool sample_walk =
      drafter.config().kind == DrafterKind::kDFlash2 && options.sampling.temperature > 0.0f;
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::SequenceState> state, target.NewSequence());
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<DraftStream> stream, drafter.NewStream());
  ABSL_ASSIGN_OR_RETURN(target::ForwardResult prefill,
                        target::Prefill(target, *state, prompt, 512, taps));
  ABSL_RETURN_IF_ERROR(drafter.AppendTaps(*stream, TapForm::kRaw, prefill.taps, p));

  SpeculativeResult result;
  ABSL_ASSIGN_OR_RETURN(const int32_t first,
                        SampleRow(prefill.logits.data(), vocab, options.sampling, options.seed, p));
  result.output_ids = {first};
  while (static_cast<int64_t>(result.output_ids.size()) < max_new_tokens) {
    const int64_t start = p + static_cast<int64_t>(result.output_ids.size()) - 1;  // pending's
    const int64_t remaining = max_new_tokens - static_cast<int64_t>(result.output_ids.size());
    const int32_t pending = result.output_ids.back();
    ABSL_ASSIGN_OR_RETURN(
        Proposal proposal,
        drafter.Propose(*stream, pending,
                        {.block_size = std::min(b, remaining + 1),
                         .temperature = sample_walk ? options.sampling.temperature : 0.0f,
                         .walk_seed = options.seed}));
    std::vector<int32_t> window = {pending};
    window.insert(window.end(), proposal.ids.begin(), proposal.ids.end());
    target::ForwardResult verify;
    ABSL_RETURN_IF_ERROR(target.Forward(
        *state, {.tokens = window, .logits = target::LogitsRows::kAll, .tap_layer_ids = taps},
        &verify));
    // Row i's token (position start + i + 1) is the target's own draw; accept draft i while it
    // equals that draw, then the first differing draw is the bonus.
    std::vector<int32_t> kept;
    for (int64_t i = 0;
         i < static_cast<int64_t>(window.size()) && static_cast<int64_t>(kept.size()) < remaining;
         ++i) {
      ABSL_ASSIGN_OR_RETURN(const int32_t token,
                            SampleRow(verify.logits.data() + i * vocab, vocab, options.sampling,
                                      options.seed, start + i + 1));
      kept.push_back(token);
      if (i >= static_cast<int64_t>(proposal.ids.size()) || token != proposal.ids[i]) break;
    }
    const int64_t produced = static_cast<int64_t>(kept.size());
    result.output_ids.insert(result.output_ids.end(), kept.begin(), kept.end());
    // The kept rows are the old pending and the accepted drafts: the target keeps their KV, the
    // drafter their taps.
    ABSL_RETURN_IF_ERROR(target.Commit(*state, produced));
    ABSL_RETURN_IF_ERROR(drafter.AppendTaps(
        *stream, TapForm::kRaw, std::span<const float>(verify.taps.data(), produced * tap_width),
        produced));
    result.accept_lengths.push_back(produced);
    result.round_anchors.push_back(pending);
    result.round_proposals.push_back(std::move(proposal.ids));
  }
  return result;
}

}  // namespace twinspan::drafter
