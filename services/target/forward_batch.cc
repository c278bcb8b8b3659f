#include "services/target/forward_batch.h"

#include <utility>

#include "common/status.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/tree_rows.h"

namespace twinspan::target {
namespace {

constexpr size_t kFloat = sizeof(float);

}  // namespace

absl::Status BatchPlan::Build(backend::Backend& backend, const TargetConfig& config,
                              absl::Span<const SequenceForward> batch) {
  int64_t rows = 0;
  for (const SequenceForward& e : batch) rows += static_cast<int64_t>(e.request->tokens.size());
  tokens_.reserve(rows);
  positions_.reserve(rows);  // Reserved: the segments' spans point into these.
  slots_.reserve(rows);
  for (const SequenceForward& e : batch) {
    const int64_t first = static_cast<int64_t>(tokens_.size());
    const int64_t n = static_cast<int64_t>(e.request->tokens.size());
    const int64_t length = e.state->length();
    const absl::Span<const int32_t> parents = e.request->parents;
    const std::vector<int64_t> depth =
        parents.empty() ? std::vector<int64_t>() : cpu::TreeDepths(parents.data(), n);
    for (int64_t r = 0; r < n; ++r) {
      tokens_.push_back(e.request->tokens[r]);
      positions_.push_back(length + (parents.empty() ? r : depth[r]));
      slots_.push_back(length + r);
    }
    segments_.push_back(RowSegment{first, n, absl::MakeConstSpan(positions_).subspan(first, n),
                                   absl::MakeConstSpan(slots_).subspan(first, n), length, parents});
    states_.push_back(e.state);
  }
  const int64_t half = config.rotary_dim / 2;
  std::vector<float> rope(2 * rows * half);
  ABSL_RETURN_IF_ERROR(cpu::RopeAngles(positions_.data(), rows, config.rotary_dim,
                                       config.rope_theta, rope.data(), rope.data() + rows * half));
  ABSL_ASSIGN_OR_RETURN(rope_, backend.UploadFloats(rope));
  layer_rows_ = LayerRows{rows, rope_->floats(), rope_->floats() + rows * half, segments_};
  return absl::OkStatus();
}

std::vector<LayerState*> BatchPlan::LayerStates(int64_t layer) const {
  std::vector<LayerState*> states;
  states.reserve(states_.size());
  for (SequenceState* state : states_) states.push_back(&state->layer(layer));
  return states;
}

absl::Status BatchOutputs::Build(backend::Backend& backend, const TargetConfig& config,
                                 absl::Span<const SequenceForward> batch, const BatchPlan& plan) {
  backend_ = &backend;
  hidden_ = config.hidden_size;
  vocab_ = config.vocab_size;
  for (size_t i = 0; i < batch.size(); ++i) {
    Entry e;
    e.request = batch[i].request;
    e.result = batch[i].result;
    e.segment = plan.layer_rows().segments[i];
    const int64_t rows = e.segment.rows;
    ForwardResult& r = *e.result;
    r = ForwardResult{};
    r.first_position = e.segment.positions[0];
    r.rows = rows;
    e.first_logit_row = e.request->logits == LogitsRows::kLast ? rows - 1 : 0;
    r.logit_rows = e.request->logits == LogitsRows::kNone ? 0 : rows - e.first_logit_row;
    e.logit_offset = logit_rows_;
    logit_rows_ += r.logit_rows;
    if (e.request->logits_out == nullptr) r.logits.resize(r.logit_rows * vocab_);
    const int64_t n_taps = static_cast<int64_t>(e.request->tap_layer_ids.size());
    if (n_taps > 0 && e.request->taps_out != nullptr) {
      e.tap_rows = e.request->taps_out->floats();
    } else {
      r.taps.resize(rows * n_taps * hidden_);
      if (n_taps > 0) {
        ABSL_ASSIGN_OR_RETURN(e.taps, backend.AllocateFloats(rows * n_taps * hidden_));
        e.tap_rows = e.taps->floats();
      }
    }
    if (e.request->capture_hidden_states) {
      r.embeddings.resize(rows * hidden_);
      r.layer_outputs.resize(config.num_layers * rows * hidden_);
      r.final_norm.resize(rows * hidden_);
    }
    entries_.push_back(std::move(e));
  }
  return absl::OkStatus();
}

absl::Status BatchOutputs::Capture(const backend::Buffer& h,
                                   std::vector<float> ForwardResult::*field, int64_t block) {
  for (const Entry& e : entries_) {
    if (!e.request->capture_hidden_states) continue;
    const int64_t n = e.segment.rows * hidden_;
    ABSL_RETURN_IF_ERROR(backend_->Download((e.result->*field).data() + block * n, h,
                                            e.segment.first_row * hidden_ * kFloat, n * kFloat));
  }
  return absl::OkStatus();
}

absl::Status BatchOutputs::CaptureEmbeddings(const backend::Buffer& h) {
  return Capture(h, &ForwardResult::embeddings, 0);
}

absl::Status BatchOutputs::CaptureFinalNorm(const backend::Buffer& h) {
  return Capture(h, &ForwardResult::final_norm, 0);
}

absl::Status BatchOutputs::AfterLayer(int64_t layer, const backend::Buffer& h) {
  ABSL_RETURN_IF_ERROR(Capture(h, &ForwardResult::layer_outputs, layer));
  const size_t row_bytes = hidden_ * kFloat;
  for (const Entry& e : entries_) {
    const std::vector<int64_t>& ids = e.request->tap_layer_ids;
    for (size_t t = 0; t < ids.size(); ++t) {  // Tap t of row r: taps[r, t, :] = h[row r].
      if (ids[t] != layer) continue;
      ABSL_RETURN_IF_ERROR(backend_->Copy2D(e.tap_rows + t * hidden_, ids.size() * row_bytes,
                                            h.floats() + e.segment.first_row * hidden_, row_bytes,
                                            row_bytes, e.segment.rows));
    }
  }
  return absl::OkStatus();
}

absl::Status BatchOutputs::Logits(const backend::Buffer& h, const backend::LinearHandle& lm_head) {
  if (logit_rows_ == 0) return absl::OkStatus();
  // The head reads the wanted rows straight from h when they sit back to back there (one
  // sequence, or every entry kAll); otherwise they are packed first.
  int64_t start = -1, next = -1;
  bool contiguous = true;
  for (const Entry& e : entries_) {
    if (e.result->logit_rows == 0) continue;
    const int64_t row = e.segment.first_row + e.first_logit_row;
    if (start < 0) start = row;
    contiguous = contiguous && (next < 0 || row == next);
    next = row + e.result->logit_rows;
  }
  const float* in = h.floats() + start * hidden_;
  std::unique_ptr<backend::Buffer> packed;
  if (!contiguous) {
    ABSL_ASSIGN_OR_RETURN(packed, backend_->AllocateFloats(logit_rows_ * hidden_));
    for (const Entry& e : entries_) {
      ABSL_RETURN_IF_ERROR(
          backend_->Copy(packed->floats() + e.logit_offset * hidden_,
                         h.floats() + (e.segment.first_row + e.first_logit_row) * hidden_,
                         e.result->logit_rows * hidden_ * kFloat));
    }
    in = packed->floats();
  }
  ABSL_ASSIGN_OR_RETURN(logits_, backend_->AllocateFloats(logit_rows_ * vocab_));
  return backend_->Linear(in, hidden_, logit_rows_, lm_head, logits_->floats(), vocab_);
}

absl::Status BatchOutputs::Finish() {
  for (Entry& e : entries_) {
    ForwardResult& r = *e.result;
    if (e.taps != nullptr) {
      ABSL_RETURN_IF_ERROR(backend_->Download(r.taps.data(), *e.taps, 0, e.taps->bytes()));
    }
    if (r.logit_rows == 0) continue;
    const size_t bytes = r.logit_rows * vocab_ * kFloat;
    if (e.request->logits_out != nullptr) {
      ABSL_RETURN_IF_ERROR(
          backend_->Copy(e.request->logits_out->floats() + e.request->logits_out_row * vocab_,
                         logits_->floats() + e.logit_offset * vocab_, bytes));
    } else {
      ABSL_RETURN_IF_ERROR(
          backend_->Download(r.logits.data(), *logits_, e.logit_offset * vocab_ * kFloat, bytes));
    }
  }
  return absl::OkStatus();
}

}  // namespace twinspan::target
