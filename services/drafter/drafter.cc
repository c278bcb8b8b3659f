#include "services/drafter/drafter.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/config/target_config.h"
#include "common/safetensors/checkpoint.h"
#include "common/status.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/linear.h"
#include "services/drafter/draft_tree.h"
#include "services/drafter/walk_uniform.h"
#include "services/weights/weight_loader.h"

namespace twinspan::drafter {
namespace {

template <typename T>
absl::Status DownloadTo(backend::Backend& b, std::vector<T>& host, const backend::Buffer& src,
                        int64_t count) {
  host.resize(count);
  return b.Download(host.data(), src, 0, count * sizeof(T));
}

template <typename T>
std::span<T> Span(T* p, int64_t count) {
  return {p, static_cast<size_t>(count)};
}

// Sections start on 64-byte lines, as every op's inputs may want.
int64_t Section(int64_t& next, int64_t elements) {
  const int64_t start = next;
  next += (elements + 15) / 16 * 16;
  return start;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Drafter>> Drafter::Create(std::unique_ptr<DrafterModel> model,
                                                         const cpu::EmbeddingTable& embedding,
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
  ABSL_ASSIGN_OR_RETURN(HeadVariant variant,
                        MakeHeadVariant(head, config.vocab_size, config.head_variants));
  backend::Backend& b = model->backend();
  absl::MutexLock lock(&model->mu());
  ABSL_ASSIGN_OR_RETURN(DraftHead draft_head, DraftHead::Create(b, lm_head, std::move(variant)));
  const int64_t k = config.kind == DrafterKind::kDFlash2 ? config.selector_top_k : 1;
  if (config.kind == DrafterKind::kDFlash2 && k > draft_head.columns()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Drafter: selector_top_k = %d exceeds the %d columns of head variant %s",
                        config.selector_top_k, draft_head.columns(), head));
  }
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<backend::EmbeddingHandle> table,
                        b.UploadEmbedding(embedding));
  const int64_t slots = kMaxHeadRows, rank = std::max<int64_t>(1, config.selector_rank);
  RoundBuffers r;
  ABSL_ASSIGN_OR_RETURN(r.logits, b.AllocateFloats(slots * draft_head.columns()));
  ABSL_ASSIGN_OR_RETURN(r.top_local, b.Allocate(slots * k * sizeof(int32_t)));
  r.candidates = Section(r.elements, slots * k);
  r.top_values = Section(r.elements, slots * k);
  r.proposals = Section(r.elements, slots);
  r.scores = Section(r.elements, slots * k);
  r.probabilities = Section(r.elements, slots * k);
  r.projected = Section(r.elements, slots * rank);
  r.table = Section(r.elements, slots * k * k);
  static_assert(sizeof(int32_t) == sizeof(float));
  ABSL_ASSIGN_OR_RETURN(r.results, b.AllocateFloats(r.elements));
  return std::unique_ptr<Drafter>(
      new Drafter(std::move(model), std::move(table), std::move(draft_head), std::move(r)));
}

absl::StatusOr<std::unique_ptr<Drafter>> Drafter::Open(const std::string& drafter_dir,
                                                       const std::string& target_dir,
                                                       const DrafterOptions& options) {
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<DrafterModel> model,
                        DrafterModel::Open(drafter_dir, options.model, options.as_dflash_v1));
  ABSL_ASSIGN_OR_RETURN(const target::TargetConfig target_config,
                        target::LoadTargetConfig(target_dir));
  const DrafterConfig& own = model->config();
  bool taps_fit = true;
  for (int64_t layer : own.target_layer_ids)
    taps_fit = taps_fit && layer < target_config.num_layers;
  if (own.vocab_size != target_config.vocab_size || own.hidden_size != target_config.hidden_size ||
      !taps_fit) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s/config.json is a drafter for a target with vocab_size %d and hidden_size %d that taps "
        "layers [%s], but %s/config.json has vocab_size %d, hidden_size %d and %d layers: it is "
        "the drafter of another target; pair it with the target it was trained for",
        drafter_dir, own.vocab_size, own.hidden_size, absl::StrJoin(own.target_layer_ids, ","),
        target_dir, target_config.vocab_size, target_config.hidden_size, target_config.num_layers));
  }
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
                        Create(std::move(model), embedding, lm_head, options.head));
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
  absl::MutexLock lock(&model_->mu());
  return model_->AppendTapsLocked(stream, form, taps.data(), rows);
}

absl::Status Drafter::AppendTapsInBackend(DraftStream& stream, TapForm form, const float* taps,
                                          int64_t rows) const {
  absl::MutexLock lock(&model_->mu());
  return model_->AppendTapsLocked(stream, form, taps, rows, /*in_backend=*/true);
}

absl::Status Drafter::ScaleAndCap(int64_t rows, int64_t columns) const {
  const DrafterConfig& config = model_->config();
  if (config.output_multiplier == 1.0f && config.final_logit_softcapping <= 0.0f) {
    return absl::OkStatus();
  }
  backend::Backend& b = model_->backend();
  std::vector<float> logits;
  ABSL_RETURN_IF_ERROR(DownloadTo(b, logits, *round_.logits, rows * columns));
  if (config.output_multiplier != 1.0f) {
    for (float& x : logits) x *= config.output_multiplier;
  }
  if (config.final_logit_softcapping > 0.0f) {
    const float cap = config.final_logit_softcapping;
    for (float& x : logits) x = std::tanh(x / cap) * cap;
  }
  return b.Upload(*round_.logits, 0, logits.data(), logits.size() * sizeof(float));
}

absl::StatusOr<Proposal> Drafter::Propose(DraftStream& stream, int32_t pending,
                                          const ProposeOptions& options) const {
  const DrafterConfig& config = model_->config();
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
  const bool tree = options.tree_nodes > 0;
  if (tree &&
      (config.kind != DrafterKind::kDFlash2 || sampled || options.tree_nodes > kMaxTreeNodes)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Propose: a tree of %d drafts needs a DFlash2 drafter, a greedy walk and at most %d "
        "nodes",
        options.tree_nodes, kMaxTreeNodes));
  }
  std::vector<float> uniforms(options.walk_uniforms.begin(), options.walk_uniforms.end());
  if (sampled && uniforms.empty()) {
    // Proposal s occupies absolute position context_length + 1 + s.
    for (int64_t s = 0; s < slots; ++s) {
      uniforms.push_back(WalkUniform(options.walk_seed, stream.context_length() + 1 + s));
    }
  }

  backend::Backend& be = model_->backend();
  absl::MutexLock lock(&model_->mu());
  // Block [pending, MASK x (B-1)] through the target's embedding.
  std::vector<int32_t> block(b, config.mask_token_id);
  block[0] = pending;
  ABSL_RETURN_IF_ERROR(be.Embedding(*embedding_, block, model_->block_input()));
  if (config.input_embedding_scale != 1.0f) {  // A host round trip; no published checkpoint scales.
    std::vector<float> embeddings(b * h);
    ABSL_RETURN_IF_ERROR(be.Download(embeddings.data(), *model_->block_input_buffer(), 0,
                                     embeddings.size() * sizeof(float)));
    for (float& x : embeddings) x *= config.input_embedding_scale;
    ABSL_RETURN_IF_ERROR(be.Upload(*model_->block_input_buffer(), 0, embeddings.data(),
                                   embeddings.size() * sizeof(float)));
  }
  ABSL_RETURN_IF_ERROR(model_->ForwardLocked(stream, b, nullptr));

  // Slot 0 is the anchor; slots 1..B-1 propose.
  const float* draft_hidden = model_->block_hidden() + h;
  Proposal proposal;
  proposal.columns = head_.columns();
  float* logits = round_.logits->floats();
  ABSL_RETURN_IF_ERROR(head_.Logits(be, draft_hidden, h, slots, logits));
  ABSL_RETURN_IF_ERROR(ScaleAndCap(slots, proposal.columns));

  // Top-k over the packed columns, mapped to token ids on the backend.
  const int64_t k = config.kind == DrafterKind::kDFlash2 ? config.selector_top_k : 1;
  const RoundBuffers& r = round_;
  int32_t* top_local = static_cast<int32_t*>(r.top_local->data());
  int32_t* candidates = r.at<int32_t>(r.candidates);
  ABSL_RETURN_IF_ERROR(be.TopK(logits, r.at<float>(r.top_values), top_local,
                               {.rows = slots, .cols = proposal.columns, .k = k}));
  ABSL_RETURN_IF_ERROR(be.SpanIds(head_.variant().spans, top_local, slots * k, candidates));

  if (config.kind == DrafterKind::kDFlash2) {
    const DeviceSelector& selector = *model_->device_weights().selector;
    const int64_t rank = config.selector_rank;
    ABSL_RETURN_IF_ERROR(be.Linear(draft_hidden, h, slots, *selector.hidden_projection,
                                   r.at<float>(r.projected), rank));
    const cpu::SelectorWalkInputs inputs{
        .candidate_ids = Span<const int32_t>(candidates, slots * k),
        .unary = Span<const float>(r.at<float>(r.top_values), slots * k),
        .hidden_projection = Span<const float>(r.at<float>(r.projected), slots * rank),
        .predecessor = selector.predecessor_view,
        .successor = selector.successor_view,
        .uniforms = sampled ? std::span<const float>(uniforms) : std::span<const float>()};
    const cpu::SelectorWalkParams params{.slots = slots,
                                         .top_k = k,
                                         .rank = rank,
                                         .anchor_id = pending,
                                         .temperature = options.temperature};
    if (tree) {  // Every score a tree may need; the tree itself is built on the host below.
      ABSL_RETURN_IF_ERROR(
          be.SelectorScoreTable(inputs, Span<float>(r.at<float>(r.table), slots * k * k), params));
    } else {
      ABSL_RETURN_IF_ERROR(be.SelectorWalk(
          inputs,
          {.proposals = Span<int32_t>(r.at<int32_t>(r.proposals), slots),
           .scores = Span<float>(r.at<float>(r.scores), slots * k),
           .probabilities = Span<float>(r.at<float>(r.probabilities), sampled ? slots * k : 0)},
          params));
    }
  }
  // The one wait of the round: everything the host reads, in one copy.
  std::vector<int32_t> results;
  const int64_t read = config.kind != DrafterKind::kDFlash2 ? r.top_values + slots * k
                       : tree                               ? r.table + slots * k * k
                                                            : r.table;
  ABSL_RETURN_IF_ERROR(DownloadTo(be, results, *r.results, read));
  const auto ints = [&](int64_t section, int64_t n) {
    return std::vector<int32_t>(results.begin() + section, results.begin() + section + n);
  };
  const auto floats = [&](int64_t section, int64_t n) {
    std::vector<float> out(n);
    std::memcpy(out.data(), results.data() + section, n * sizeof(float));
    return out;
  };
  if (config.kind == DrafterKind::kDFlash) {
    proposal.ids = ints(r.candidates, slots);
  } else if (tree) {
    proposal.candidate_ids = ints(r.candidates, slots * k);
    proposal.candidate_logits = floats(r.top_values, slots * k);
    proposal.selector_projection = floats(r.projected, slots * config.selector_rank);
    const std::vector<float> table = floats(r.table, slots * k * k);
    ABSL_ASSIGN_OR_RETURN(DraftTree built,
                          BuildDraftTree(proposal.candidate_ids, table, slots, k,
                                         DraftTreeOptions{.nodes = options.tree_nodes}));
    proposal.ids = std::move(built.ids);
    proposal.tree_parents = std::move(built.parents);
  } else {
    proposal.ids = ints(r.proposals, slots);
    proposal.walk_scores = floats(r.scores, slots * k);
    if (sampled) proposal.probabilities = floats(r.probabilities, slots * k);
    proposal.selector_projection = floats(r.projected, slots * config.selector_rank);
    proposal.candidate_ids = ints(r.candidates, slots * k);
    proposal.candidate_logits = floats(r.top_values, slots * k);
  }
  if (options.want_logits) {
    ABSL_RETURN_IF_ERROR(DownloadTo(be, proposal.logits, *round_.logits, slots * proposal.columns));
    proposal.column_ids.resize(proposal.columns);
    for (int64_t c = 0; c < proposal.columns; ++c) {
      proposal.column_ids[c] = head_.variant().GlobalId(c);
    }
  }
  return proposal;
}

}  // namespace twinspan::drafter
