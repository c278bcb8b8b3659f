#include "services/drafter/drafter.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "common/safetensors/checkpoint.h"
#include "common/status.h"
#include "kernels/cpu/candidate_selector.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/topk.h"
#include "services/drafter/walk_uniform.h"
#include "services/target/target_config.h"
#include "services/target/weight_loader.h"

namespace twinspan::drafter {
namespace {

// The reference's compute_logits: scale, then tanh soft-cap.
void ScaleAndCap(const DrafterConfig& config, std::vector<float>& logits) {
  if (config.output_multiplier != 1.0f) {
    for (float& x : logits) x *= config.output_multiplier;
  }
  if (config.final_logit_softcapping > 0.0f) {
    const float cap = config.final_logit_softcapping;
    for (float& x : logits) x = std::tanh(x / cap) * cap;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Drafter>> Drafter::Create(std::unique_ptr<DrafterModel> model,
                                                         cpu::EmbeddingTable embedding,
                                                         const cpu::LinearWeight& lm_head,
                                                         const std::string& head) {
  const DrafterConfig& config = model->config();
  if (embedding.rows() != config.vocab_size || embedding.dim() != config.hidden_size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Drafter: the target's embedding is [%d, %d], the drafter needs [vocab_size %d, hidden %d]",
        embedding.rows(), embedding.dim(), config.vocab_size, config.hidden_size));
  }
  if (lm_head.out_features() != config.vocab_size || lm_head.in_features() != config.hidden_size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Drafter: the target's lm_head is [%d, %d], the drafter needs [vocab_size %d, hidden %d]",
        lm_head.out_features(), lm_head.in_features(), config.vocab_size, config.hidden_size));
  }
  ABSL_ASSIGN_OR_RETURN(HeadVariant variant, MakeHeadVariant(head, config.vocab_size));
  ABSL_ASSIGN_OR_RETURN(DraftHead draft_head, DraftHead::Create(lm_head, std::move(variant)));
  if (config.kind == DrafterKind::kDFlash2 && config.selector_top_k > draft_head.columns()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Drafter: selector_top_k = %d exceeds the %d columns of head variant %s",
                        config.selector_top_k, draft_head.columns(), head));
  }
  return std::unique_ptr<Drafter>(
      new Drafter(std::move(model), std::move(embedding), std::move(draft_head)));
}

absl::StatusOr<std::unique_ptr<Drafter>> Drafter::Open(const std::string& drafter_dir,
                                                       const std::string& target_dir,
                                                       const DrafterOptions& options) {
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<DrafterModel> model,
                        DrafterModel::Open(drafter_dir, options.model, options.as_dflash_v1));
  ABSL_ASSIGN_OR_RETURN(const target::TargetConfig target_config,
                        target::LoadTargetConfig(target_dir));
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> owned, Checkpoint::Open(target_dir));
  std::shared_ptr<const Checkpoint> checkpoint(std::move(owned));
  const int64_t vocab = target_config.vocab_size, h = target_config.hidden_size;
  const std::string embed_name = target::TextModelPrefix(*checkpoint) + "embed_tokens.weight";
  ABSL_ASSIGN_OR_RETURN(cpu::EmbeddingTable embedding,
                        target::LoadEmbedding(*checkpoint, embed_name, vocab, h));
  cpu::LinearWeight lm_head;
  if (target_config.tie_word_embeddings && !checkpoint->Has("lm_head.weight") &&
      !checkpoint->Has("lm_head.trellis")) {
    ABSL_ASSIGN_OR_RETURN(lm_head, cpu::LinearWeight::Dense(vocab, h, embedding.ToFloat()));
  } else {
    ABSL_ASSIGN_OR_RETURN(lm_head, target::LoadLinear(*checkpoint, "lm_head", vocab, h));
  }
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<Drafter> drafter,
                        Create(std::move(model), std::move(embedding), lm_head, options.head));
  drafter->target_checkpoint_ = checkpoint;
  return drafter;
}

absl::Status Drafter::AppendTaps(DraftStream& stream, TapForm form, std::span<const float> taps,
                                 int64_t rows) const {
  const DrafterConfig& config = model_->config();
  const int64_t width =
      form == TapForm::kRaw ? config.num_taps() * config.hidden_size : config.hidden_size;
  if (rows < 0 || static_cast<int64_t>(taps.size()) != rows * width) {
    return absl::InvalidArgumentError(
        absl::StrFormat("AppendTaps: %d %s tap values for %d rows; expected %d per row",
                        taps.size(), form == TapForm::kRaw ? "raw" : "fused", rows, width));
  }
  if (form == TapForm::kFused) return model_->AppendContext(stream, taps.data(), rows);
  std::vector<float> fused(rows * config.hidden_size);
  ABSL_RETURN_IF_ERROR(model_->FuseTaps(taps.data(), rows, fused.data()));
  return model_->AppendContext(stream, fused.data(), rows);
}

absl::StatusOr<Proposal> Drafter::Propose(DraftStream& stream, int32_t pending,
                                          const ProposeOptions& options) const {
  const DrafterConfig& config = model_->config();
  const cpu::Context& ctx = model_->context();
  const int64_t b = options.block_size == 0 ? config.block_size : options.block_size;
  if (b < 2 || b > kMaxBlockSize) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Propose: block size %d is outside [2, %d]", b, kMaxBlockSize));
  }
  if (pending < 0 || pending >= config.vocab_size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Propose: pending token %d is outside the vocabulary [0, %d)", pending, config.vocab_size));
  }
  const bool sampled = options.temperature > 0.0f;
  if (!(options.temperature >= 0.0f) || (sampled && config.kind != DrafterKind::kDFlash2)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Propose: temperature %f; only a DFlash2 drafter samples (its selector walk)",
        options.temperature));
  }
  const int64_t slots = b - 1, h = config.hidden_size;
  if (sampled && !options.walk_uniforms.empty() &&
      static_cast<int64_t>(options.walk_uniforms.size()) != slots) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Propose: a sampled walk needs %d uniforms, got %d", slots, options.walk_uniforms.size()));
  }
  std::vector<float> uniforms(options.walk_uniforms.begin(), options.walk_uniforms.end());
  if (sampled && uniforms.empty()) {
    // Proposal s occupies absolute position context_length + 1 + s.
    for (int64_t s = 0; s < slots; ++s) {
      uniforms.push_back(WalkUniform(options.walk_seed, stream.context_length() + 1 + s));
    }
  }

  // Block [pending, MASK x (B-1)] through the target's embedding.
  std::vector<int32_t> block(b, config.mask_token_id);
  block[0] = pending;
  std::vector<float> embeddings(b * h), hidden(b * h);
  ABSL_RETURN_IF_ERROR(cpu::Embedding(ctx, embedding_, block.data(), b, embeddings.data()));
  if (config.input_embedding_scale != 1.0f) {
    for (float& x : embeddings) x *= config.input_embedding_scale;
  }
  ABSL_RETURN_IF_ERROR(model_->ForwardBlock(stream, embeddings.data(), b, hidden.data()));

  // Slot 0 is the anchor; slots 1..B-1 propose.
  const float* draft_hidden = hidden.data() + h;
  Proposal proposal;
  proposal.columns = head_.columns();
  std::vector<float> logits(slots * proposal.columns);
  ABSL_RETURN_IF_ERROR(head_.Logits(ctx, draft_hidden, slots, logits.data()));
  ScaleAndCap(config, logits);

  const int64_t k = config.kind == DrafterKind::kDFlash2 ? config.selector_top_k : 1;
  std::vector<float> top_values(slots * k);
  std::vector<int32_t> top_local(slots * k);
  ABSL_RETURN_IF_ERROR(cpu::TopK(ctx, logits, top_values, top_local,
                                 {.rows = slots, .cols = proposal.columns, .k = k}));
  std::vector<int32_t> top_ids(slots * k);
  for (int64_t i = 0; i < slots * k; ++i) top_ids[i] = head_.variant().GlobalId(top_local[i]);

  if (config.kind == DrafterKind::kDFlash) {
    proposal.ids = std::move(top_ids);
  } else {
    const SelectorWeights& selector = *model_->weights().selector;
    const int64_t rank = config.selector_rank;
    std::vector<float> projected(slots * rank);
    ABSL_RETURN_IF_ERROR(
        cpu::Linear(ctx, draft_hidden, slots, selector.hidden_projection, projected.data()));
    proposal.ids.resize(slots);
    proposal.walk_scores.resize(slots * k);
    if (sampled) proposal.probabilities.resize(slots * k);
    ABSL_RETURN_IF_ERROR(cpu::SelectorWalk(ctx,
                                           {.candidate_ids = top_ids,
                                            .unary = top_values,
                                            .hidden_projection = projected,
                                            .predecessor = selector.predecessor.view(),
                                            .successor = selector.successor.view(),
                                            .uniforms = uniforms},
                                           {.proposals = proposal.ids,
                                            .scores = proposal.walk_scores,
                                            .probabilities = proposal.probabilities},
                                           {.slots = slots,
                                            .top_k = k,
                                            .rank = rank,
                                            .anchor_id = pending,
                                            .temperature = options.temperature}));
    proposal.selector_projection = std::move(projected);
    proposal.candidate_ids = std::move(top_ids);
    proposal.candidate_logits = std::move(top_values);
  }
  if (options.want_logits) {
    proposal.logits = std::move(logits);
    proposal.column_ids.resize(proposal.columns);
    for (int64_t c = 0; c < proposal.columns; ++c) {
      proposal.column_ids[c] = head_.variant().GlobalId(c);
    }
  }
  return proposal;
}

}  // namespace twinspan::drafter
