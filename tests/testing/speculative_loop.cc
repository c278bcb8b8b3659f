#include "tests/testing/speculative_loop.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "services/draft_link/accept_walk.h"

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
  const bool sample_walk = drafter.config().kind == DrafterKind::kDFlash2 &&
                           options.sampling.temperature > 0.0f && options.tree_nodes == 0;
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
    ProposeOptions propose;
    propose.block_size = std::min(b, remaining + 1);
    propose.temperature = sample_walk ? options.sampling.temperature : 0.0f;
    propose.walk_seed = options.seed;
    propose.tree_nodes = options.tree_nodes;
    ABSL_ASSIGN_OR_RETURN(Proposal proposal, drafter.Propose(*stream, pending, propose));
    engine::DraftProposal drafts;
    drafts.ids.assign(proposal.ids.begin(), proposal.ids.end());
    drafts.parents.assign(proposal.tree_parents.begin(), proposal.tree_parents.end());
    std::vector<int32_t> window = {pending};
    window.insert(window.end(), proposal.ids.begin(), proposal.ids.end());
    const std::vector<int32_t> parents =
        drafts.is_tree() ? drafts.WindowParents() : std::vector<int32_t>();
    target::ForwardResult verify;
    ABSL_RETURN_IF_ERROR(target.Forward(*state,
                                        {.tokens = window,
                                         .parents = parents,
                                         .logits = target::LogitsRows::kAll,
                                         .tap_layer_ids = taps},
                                        &verify));
    // A row's token (at its depth's position) is the target's own draw; the walk follows the
    // drafts equal to the draws, then the first draw without one is the bonus.
    ABSL_ASSIGN_OR_RETURN(
        engine::AcceptedPath path,
        engine::WalkAccepted(drafts, [&](int64_t row, int64_t depth) -> absl::StatusOr<uint32_t> {
          ABSL_ASSIGN_OR_RETURN(const int32_t token,
                                SampleRow(verify.logits.data() + row * vocab, vocab,
                                          options.sampling, options.seed, start + depth + 1));
          return static_cast<uint32_t>(token);
        }));
    const int64_t produced = std::min<int64_t>(static_cast<int64_t>(path.rows.size()), remaining);
    path.rows.resize(produced);
    result.output_ids.insert(result.output_ids.end(), path.tokens.begin(),
                             path.tokens.begin() + produced);
    // The kept rows are the old pending and the accepted drafts: the target keeps their KV, the
    // drafter their taps.
    ABSL_RETURN_IF_ERROR(target.CommitPath(*state, path.rows));
    std::vector<float> kept_taps;
    for (int64_t row : path.rows) {
      kept_taps.insert(kept_taps.end(), verify.taps.begin() + row * tap_width,
                       verify.taps.begin() + (row + 1) * tap_width);
    }
    ABSL_RETURN_IF_ERROR(drafter.AppendTaps(*stream, TapForm::kRaw, kept_taps, produced));
    result.accept_lengths.push_back(produced);
    result.round_anchors.push_back(pending);
    result.round_proposals.push_back(std::move(proposal.ids));
    result.round_parents.push_back(std::move(proposal.tree_parents));
  }
  return result;
}

}  // namespace twinspan::drafter
