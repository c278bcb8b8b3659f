#include "services/target/decoder_model.h"

#include <algorithm>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/tree_rows.h"
#include "services/target/forward_batch.h"

namespace twinspan::target {
namespace {

int64_t LogitRows(const ForwardRequest& request) {
  const int64_t rows = static_cast<int64_t>(request.tokens.size());
  switch (request.logits) {
    case LogitsRows::kAll:
      return rows;
    case LogitsRows::kLast:
      return rows > 0 ? 1 : 0;
    case LogitsRows::kNone:
      break;
  }
  return 0;
}

}  // namespace

ModelBackend ModelBackend::For(const TargetOptions& options) {
  ModelBackend b;
  if (options.backend != nullptr) {
    b.backend = options.backend;
  } else {
    b.owned = cpu::NewCpuBackend(options.pool);
    b.backend = b.owned.get();
  }
  return b;
}

absl::StatusOr<DecoderHandles> DecoderHandles::Upload(backend::Backend& backend,
                                                      const cpu::EmbeddingTable& embedding,
                                                      const std::vector<float>& final_norm,
                                                      const cpu::LinearWeight& lm_head) {
  DecoderHandles h;
  ABSL_ASSIGN_OR_RETURN(h.embedding, backend.UploadEmbedding(embedding));
  ABSL_ASSIGN_OR_RETURN(h.final_norm, backend.UploadFloats(final_norm));
  ABSL_ASSIGN_OR_RETURN(h.lm_head, backend.UploadLinear(lm_head));
  return h;
}

DecoderModel::DecoderModel(TargetConfig config, const TargetOptions& options, ModelBackend backend,
                           DecoderHandles weights)
    : backend_(std::move(backend)),
      config_(std::move(config)),
      options_(options),
      weights_(std::move(weights)) {}

absl::StatusOr<LayerState> DecoderModel::NewLayerState(int64_t layer) const {
  if (config_.layer_types[layer] != LayerType::kFullAttention) {
    return absl::UnimplementedError(
        absl::StrFormat("layer %d: this family has no state for its layer type", layer));
  }
  LayerState state;
  ABSL_ASSIGN_OR_RETURN(state.kv, backend().NewKvCache(options_.kv_dtype, options_.context,
                                                       config_.num_kv_heads, config_.head_dim));
  return state;
}

absl::Status DecoderModel::CommitLayer(int64_t, LayerState&, absl::Span<const int64_t>,
                                       int64_t) const {
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SequenceState>> DecoderModel::NewSequence() const {
  std::vector<LayerState> layers;
  layers.reserve(config_.num_layers);
  absl::MutexLock lock(&mu_);
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    absl::StatusOr<LayerState> layer = NewLayerState(i);
    if (!layer.ok()) {
      layers.clear();  // Freed under the lock.
      return layer.status();
    }
    layers.push_back(*std::move(layer));
  }
  return std::make_unique<SequenceState>(options_.context, std::move(layers), &mu_);
}

absl::Status DecoderModel::CheckForward(const SequenceState& state,
                                        const ForwardRequest& request) const {
  if (!state.OwnedBy(&mu_)) {
    return absl::InvalidArgumentError("the sequence state was made by another model");
  }
  const int64_t rows = static_cast<int64_t>(request.tokens.size());
  for (int64_t id : request.tap_layer_ids) {
    if (id < 0 || id >= config_.num_layers) {
      return absl::InvalidArgumentError(
          absl::StrFormat("tap layer id %d outside [0, %d): ids name decoder layer outputs", id,
                          config_.num_layers));
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    if (request.tokens[r] < 0 || request.tokens[r] >= config_.vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrFormat("token id %d at row %d is outside the vocabulary [0, %d)",
                          request.tokens[r], r, config_.vocab_size));
    }
  }
  ABSL_RETURN_IF_ERROR(state.CheckForward(rows));
  if (!request.parents.empty()) {
    if (static_cast<int64_t>(request.parents.size()) != rows) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "a tree forward of %d tokens with %d parents", rows, request.parents.size()));
    }
    ABSL_RETURN_IF_ERROR(cpu::CheckTreeParents("tree forward", request.parents.data(), rows));
  }
  if (request.logits_out_row < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("logits_out_row %d is negative", request.logits_out_row));
  }
  const size_t logits_bytes =
      (request.logits_out_row + LogitRows(request)) * config_.vocab_size * sizeof(float);
  if (request.logits_out != nullptr && request.logits_out->bytes() < logits_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "logits_out holds %d bytes; %d logit rows of vocabulary %d from row %d need %d",
        request.logits_out->bytes(), LogitRows(request), config_.vocab_size, request.logits_out_row,
        logits_bytes));
  }
  const size_t taps_bytes =
      rows * request.tap_layer_ids.size() * config_.hidden_size * sizeof(float);
  if (request.taps_out != nullptr && request.taps_out->bytes() < taps_bytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("taps_out holds %d bytes; %d rows of %d taps of width %d need %d",
                        request.taps_out->bytes(), rows, request.tap_layer_ids.size(),
                        config_.hidden_size, taps_bytes));
  }
  return absl::OkStatus();
}

absl::Status DecoderModel::Forward(SequenceState& state, const ForwardRequest& request,
                                   ForwardResult* result) const {
  const SequenceForward entry{&state, &request, result};
  return ForwardBatch(absl::MakeConstSpan(&entry, 1));
}

absl::Status DecoderModel::ForwardBatch(absl::Span<const SequenceForward> batch) const {
  absl::MutexLock lock(&mu_);
  std::unordered_set<const SequenceState*> seen;
  for (size_t i = 0; i < batch.size(); ++i) {
    const SequenceForward& e = batch[i];
    absl::Status status =
        e.state == nullptr || e.request == nullptr || e.result == nullptr
            ? absl::InvalidArgumentError("a null state, request or result")
        : !seen.insert(e.state).second
            ? absl::InvalidArgumentError("its sequence state is already in the batch")
            : CheckForward(*e.state, *e.request);
    if (!status.ok()) {
      if (batch.size() == 1) return status;
      return absl::Status(status.code(),
                          absl::StrFormat("batch entry %d: %s", i, status.message()));
    }
  }
  for (const SequenceForward& e : batch) {
    ABSL_RETURN_IF_ERROR(
        e.state->BeginForward(static_cast<int64_t>(e.request->tokens.size()), e.request->parents));
  }
  absl::Status status = RunBatch(batch);
  if (!status.ok()) {
    // Drop the failed rows so the sequences stay usable; the forward's error is what matters.
    for (const SequenceForward& e : batch) CommitLocked(*e.state, {}).IgnoreError();
  }
  return status;
}

absl::Status DecoderModel::RunBatch(absl::Span<const SequenceForward> batch) const {
  if (batch.empty()) return absl::OkStatus();
  backend::Backend& be = backend();
  const int64_t hidden = config_.hidden_size;
  BatchPlan plan;
  ABSL_RETURN_IF_ERROR(plan.Build(be, config_, batch));
  BatchOutputs out;
  ABSL_RETURN_IF_ERROR(out.Build(be, config_, batch, plan));
  ABSL_ASSIGN_OR_RETURN(auto h, be.AllocateFloats(plan.rows() * hidden));  // The residual stream.
  ABSL_RETURN_IF_ERROR(be.Embedding(*weights_.embedding, plan.tokens(), h->floats()));
  ABSL_RETURN_IF_ERROR(out.CaptureEmbeddings(*h));
  for (int64_t layer = 0; layer < config_.num_layers; ++layer) {
    ABSL_RETURN_IF_ERROR(
        LayerForward(layer, plan.LayerStates(layer), plan.layer_rows(), h->floats()));
    ABSL_RETURN_IF_ERROR(out.AfterLayer(layer, *h));
  }
  ABSL_RETURN_IF_ERROR(be.RmsNorm(h->floats(), hidden, plan.rows(), hidden,
                                  weights_.final_norm->floats(), config_.rms_norm_eps, h->floats(),
                                  hidden));
  ABSL_RETURN_IF_ERROR(out.CaptureFinalNorm(*h));
  ABSL_RETURN_IF_ERROR(out.Logits(*h, *weights_.lm_head));
  return out.Finish();
}

absl::Status DecoderModel::Commit(SequenceState& state, int64_t n_keep) const {
  if (n_keep < 0 || n_keep > state.pending()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("commit of %d rows with %d pending", n_keep, state.pending()));
  }
  std::vector<int64_t> path(n_keep);
  for (int64_t i = 0; i < n_keep; ++i) path[i] = i;
  return CommitPath(state, path);
}

absl::Status DecoderModel::CommitPath(SequenceState& state, absl::Span<const int64_t> path) const {
  absl::MutexLock lock(&mu_);
  if (!state.OwnedBy(&mu_)) {
    return absl::InvalidArgumentError("commit of a sequence state made by another model");
  }
  ABSL_RETURN_IF_ERROR(state.CheckPath(path));
  return CommitLocked(state, path);
}

absl::Status DecoderModel::CommitLocked(SequenceState& state,
                                        absl::Span<const int64_t> path) const {
  // A tree's kept rows from the first one off its place move from the slots they were written to
  // (length + row) to their positions (length + step); rows already in place stay.
  size_t in_place = 0;
  while (in_place < path.size() && path[in_place] == static_cast<int64_t>(in_place)) ++in_place;
  const absl::Span<const int64_t> moved = path.subspan(in_place);
  for (int64_t layer = 0; layer < config_.num_layers; ++layer) {
    LayerState& layer_state = state.layer(layer);
    if (layer_state.kv != nullptr && !moved.empty()) {
      ABSL_RETURN_IF_ERROR(MoveKeptRows(*layer_state.kv, state.length(), moved,
                                        state.length() + static_cast<int64_t>(in_place),
                                        state.pending()));
    }
    ABSL_RETURN_IF_ERROR(CommitLayer(layer, layer_state, path, state.pending()));
  }
  return state.CommitRows(static_cast<int64_t>(path.size()));
}

absl::Status DecoderModel::MoveKeptRows(backend::KvCacheHandle& kv, int64_t first_slot,
                                        absl::Span<const int64_t> rows, int64_t to,
                                        int64_t pending) const {
  backend::Backend& be = backend();
  const int64_t n = static_cast<int64_t>(rows.size());
  if (kept_rows_ == nullptr || kept_rows_->capacity() < n || kept_rows_->dtype() != kv.dtype() ||
      kept_rows_->kv_heads() != kv.kv_heads() || kept_rows_->head_dim() != kv.head_dim()) {
    ABSL_ASSIGN_OR_RETURN(
        kept_rows_, be.NewKvCache(kv.dtype(), std::max(n, pending), kv.kv_heads(), kv.head_dim()));
  }
  // Sources and destinations overlap in one cache, so the rows go through kept_rows_; a run of
  // consecutive rows is one copy.
  for (int64_t i = 0; i < n;) {
    int64_t run = 1;
    while (i + run < n && rows[i + run] == rows[i] + run) ++run;
    ABSL_RETURN_IF_ERROR(be.KvCopy(kv, first_slot + rows[i], *kept_rows_, i, run));
    i += run;
  }
  return be.KvCopy(*kept_rows_, 0, kv, to, n);
}

absl::StatusOr<std::unique_ptr<PrefixBlock>> DecoderModel::SaveBlock(const SequenceState& state,
                                                                     int64_t first,
                                                                     int64_t rows) const {
  absl::MutexLock lock(&mu_);
  if (!state.OwnedBy(&mu_)) {
    return absl::InvalidArgumentError("SaveBlock of a sequence state made by another model");
  }
  if (state.pending() != 0) {
    return absl::FailedPreconditionError(
        absl::StrFormat("SaveBlock with %d rows pending: commit them first", state.pending()));
  }
  if (rows < 1 || first < 0 || first + rows > state.length()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SaveBlock of positions [%d, %d) with %d committed", first, first + rows, state.length()));
  }
  std::vector<PrefixBlock::Layer> layers(config_.num_layers);
  absl::Status status = SaveLayers(state, first, rows, layers);
  if (!status.ok()) {
    layers.clear();  // Freed under the lock.
    return status;
  }
  return std::make_unique<PrefixBlock>(first, rows, std::move(layers), &mu_);
}

absl::Status DecoderModel::SaveLayers(const SequenceState& state, int64_t first, int64_t rows,
                                      std::vector<PrefixBlock::Layer>& layers) const {
  backend::Backend& be = backend();
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    const LayerState& from = state.layer(i);
    PrefixBlock::Layer& to = layers[i];
    if (from.kv != nullptr) {
      ABSL_ASSIGN_OR_RETURN(
          to.kv, be.NewKvCache(from.kv->dtype(), rows, from.kv->kv_heads(), from.kv->head_dim()));
      ABSL_RETURN_IF_ERROR(be.KvCopy(*from.kv, first, *to.kv, 0, rows));
    }
    if (from.recurrent != nullptr) {
      if (first + rows != state.length()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "SaveBlock of positions [%d, %d): layer %d's recurrent state is the state after "
            "position %d, so a block must end there",
            first, first + rows, i, state.length() - 1));
      }
      const backend::Buffer& conv = from.recurrent->conv();
      const backend::Buffer& ssm = from.recurrent->ssm();
      ABSL_ASSIGN_OR_RETURN(to.conv, be.Allocate(conv.bytes()));
      ABSL_ASSIGN_OR_RETURN(to.ssm, be.Allocate(ssm.bytes()));
      ABSL_RETURN_IF_ERROR(be.Copy(to.conv->data(), conv.data(), conv.bytes()));
      ABSL_RETURN_IF_ERROR(be.Copy(to.ssm->data(), ssm.data(), ssm.bytes()));
    }
  }
  return absl::OkStatus();
}

absl::Status DecoderModel::LoadBlocks(SequenceState& state,
                                      absl::Span<const PrefixBlock* const> blocks) const {
  absl::MutexLock lock(&mu_);
  if (!state.OwnedBy(&mu_)) {
    return absl::InvalidArgumentError("LoadBlocks into a sequence state made by another model");
  }
  if (state.length() != 0 || state.pending() != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "LoadBlocks into a state with %d committed rows: it must be empty", state.length()));
  }
  if (blocks.empty()) return absl::InvalidArgumentError("LoadBlocks of no blocks");
  int64_t next = 0;
  for (size_t b = 0; b < blocks.size(); ++b) {
    const PrefixBlock* block = blocks[b];
    if (block == nullptr || !block->OwnedBy(&mu_) || block->num_layers() != config_.num_layers) {
      return absl::InvalidArgumentError(
          absl::StrFormat("LoadBlocks: block %d is null or of another model", b));
    }
    if (block->first() != next) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "LoadBlocks: block %d starts at position %d, not %d", b, block->first(), next));
    }
    next += block->rows();
  }
  if (next > state.capacity()) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "a cached prefix of %d positions does not fit the context of %d", next, state.capacity()));
  }
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    const LayerState& layer = state.layer(i);
    const PrefixBlock::Layer& last = blocks.back()->layer(i);
    if ((layer.recurrent != nullptr && (last.conv == nullptr || last.ssm == nullptr)) ||
        (layer.kv != nullptr && absl::c_any_of(blocks, [i](const PrefixBlock* block) {
           return block->layer(i).kv == nullptr;
         }))) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "LoadBlocks: layer %d's state is missing from the blocks (a recurrent layer needs the "
          "last block's state, an attention layer every block's K/V)",
          i));
    }
  }
  if (absl::Status status = LoadLayers(state, blocks); !status.ok()) {
    // An empty state starts from zero recurrent states: undo a partial copy.
    for (int64_t i = 0; i < config_.num_layers; ++i) {
      RecurrentState* recurrent = state.layer(i).recurrent.get();
      if (recurrent == nullptr) continue;
      backend().Zero(recurrent->conv().data(), recurrent->conv().bytes()).IgnoreError();
      backend().Zero(recurrent->ssm().data(), recurrent->ssm().bytes()).IgnoreError();
    }
    return status;
  }
  return state.Resume(next);
}

absl::Status DecoderModel::LoadLayers(SequenceState& state,
                                      absl::Span<const PrefixBlock* const> blocks) const {
  backend::Backend& be = backend();
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    LayerState& layer = state.layer(i);
    if (layer.kv != nullptr) {
      for (const PrefixBlock* block : blocks) {
        ABSL_RETURN_IF_ERROR(
            be.KvCopy(*block->layer(i).kv, 0, *layer.kv, block->first(), block->rows()));
      }
    }
    if (layer.recurrent != nullptr) {
      const PrefixBlock::Layer& last = blocks.back()->layer(i);
      ABSL_RETURN_IF_ERROR(
          be.Copy(layer.recurrent->conv().data(), last.conv->data(), last.conv->bytes()));
      ABSL_RETURN_IF_ERROR(
          be.Copy(layer.recurrent->ssm().data(), last.ssm->data(), last.ssm->bytes()));
    }
  }
  return absl::OkStatus();
}

}  // namespace twinspan::target
