#include "services/target/decoder_model.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"

namespace twinspan::target {

DecoderModel::DecoderModel(TargetConfig config, const TargetOptions& options,
                           cpu::EmbeddingTable embedding, std::vector<float> final_norm,
                           cpu::LinearWeight lm_head)
    : config_(std::move(config)),
      options_(options),
      ctx_{options.pool},
      embedding_(std::move(embedding)),
      final_norm_(std::move(final_norm)),
      lm_head_(std::move(lm_head)) {}

absl::StatusOr<LayerState> DecoderModel::NewLayerState(int64_t layer) const {
  if (config_.layer_types[layer] != LayerType::kFullAttention) {
    return absl::UnimplementedError(
        absl::StrFormat("layer %d: this family has no state for its layer type", layer));
  }
  ABSL_ASSIGN_OR_RETURN(cpu::KvCache kv,
                        cpu::KvCache::Create(options_.kv_dtype, options_.context,
                                             config_.num_kv_heads, config_.head_dim));
  LayerState state;
  state.kv = std::make_unique<cpu::KvCache>(std::move(kv));
  return state;
}

absl::Status DecoderModel::CommitLayer(int64_t, LayerState&, int64_t, int64_t) const {
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SequenceState>> DecoderModel::NewSequence() const {
  std::vector<LayerState> layers;
  layers.reserve(config_.num_layers);
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    ABSL_ASSIGN_OR_RETURN(LayerState layer, NewLayerState(i));
    layers.push_back(std::move(layer));
  }
  return std::make_unique<SequenceState>(options_.context, std::move(layers));
}

absl::Status DecoderModel::Forward(SequenceState& state, const ForwardRequest& request,
                                   ForwardResult* result) const {
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
  ABSL_RETURN_IF_ERROR(state.BeginForward(rows));
  absl::Status status = RunForward(state, request, result);
  if (!status.ok()) {
    // Drop the failed rows so the sequence stays usable; the forward's error is what matters.
    Commit(state, 0).IgnoreError();
  }
  return status;
}

absl::Status DecoderModel::RunForward(SequenceState& state, const ForwardRequest& request,
                                      ForwardResult* result) const {
  const int64_t rows = static_cast<int64_t>(request.tokens.size());
  const int64_t hidden = config_.hidden_size;
  const int64_t half_rot = config_.rotary_dim / 2;
  std::vector<int64_t> positions(rows);
  for (int64_t r = 0; r < rows; ++r) positions[r] = state.length() + r;
  std::vector<float> rope_cos(rows * half_rot), rope_sin(rows * half_rot);
  ABSL_RETURN_IF_ERROR(cpu::RopeAngles(positions.data(), rows, config_.rotary_dim,
                                       config_.rope_theta, rope_cos.data(), rope_sin.data()));
  const LayerRows layer_rows{rows, positions.data(), rope_cos.data(), rope_sin.data()};

  *result = ForwardResult{};
  result->first_position = state.length();
  result->rows = rows;
  const int64_t n_taps = static_cast<int64_t>(request.tap_layer_ids.size());
  result->taps.resize(rows * n_taps * hidden);
  std::vector<float> h(rows * hidden);
  ABSL_RETURN_IF_ERROR(cpu::Embedding(ctx_, embedding_, request.tokens.data(), rows, h.data()));
  if (request.capture_hidden_states) {
    result->embeddings = h;
    result->layer_outputs.resize(config_.num_layers * rows * hidden);
  }
  for (int64_t layer = 0; layer < config_.num_layers; ++layer) {
    ABSL_RETURN_IF_ERROR(LayerForward(layer, state.layer(layer), layer_rows, h.data()));
    if (request.capture_hidden_states) {
      std::copy(h.begin(), h.end(), result->layer_outputs.begin() + layer * rows * hidden);
    }
    for (int64_t t = 0; t < n_taps; ++t) {
      if (request.tap_layer_ids[t] != layer) continue;
      for (int64_t r = 0; r < rows; ++r) {
        std::memcpy(&result->taps[(r * n_taps + t) * hidden], &h[r * hidden],
                    hidden * sizeof(float));
      }
    }
  }
  ABSL_RETURN_IF_ERROR(cpu::RmsNorm(ctx_, h.data(), rows, hidden, final_norm_.data(),
                                    config_.rms_norm_eps, h.data()));
  if (request.capture_hidden_states) result->final_norm = h;
  const int64_t first_logit_row = request.logits == LogitsRows::kLast ? rows - 1 : 0;
  result->logit_rows = request.logits == LogitsRows::kNone ? 0 : rows - first_logit_row;
  result->logits.resize(result->logit_rows * config_.vocab_size);
  if (result->logit_rows > 0) {
    ABSL_RETURN_IF_ERROR(cpu::Linear(ctx_, h.data() + first_logit_row * hidden, result->logit_rows,
                                     lm_head_, result->logits.data()));
  }
  return absl::OkStatus();
}

absl::Status DecoderModel::Commit(SequenceState& state, int64_t n_keep) const {
  if (n_keep < 0 || n_keep > state.pending()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("commit of %d rows with %d pending", n_keep, state.pending()));
  }
  for (int64_t layer = 0; layer < config_.num_layers; ++layer) {
    ABSL_RETURN_IF_ERROR(CommitLayer(layer, state.layer(layer), n_keep, state.pending()));
  }
  return state.CommitRows(n_keep);
}

}  // namespace twinspan::target
