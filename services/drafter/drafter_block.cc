// DrafterModel's block forward on the backend: the layer loop of drafter_model.h's comment, every
// intermediate in the model's scratch.
#include <cmath>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "services/drafter/drafter_model.h"

namespace twinspan::drafter {
namespace {

constexpr size_t kFloat = sizeof(float);

}  // namespace

absl::Status DrafterModel::ForwardLocked(DraftStream& stream, int64_t rows,
                                         BlockTrace* trace) const {
  const int64_t start = stream.context_length_, h = config_.hidden_size;
  if (rows < 1 || rows > kScratchRows) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ForwardBlock: rows = %d is outside [1, %d]", rows, kScratchRows));
  }
  if (start + rows > stream.capacity_) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "ForwardBlock: a block of %d after %d context rows exceeds the stream's %d positions", rows,
        start, stream.capacity_));
  }
  if (trace != nullptr) *trace = BlockTrace{};
  std::vector<int64_t> positions(rows);
  for (int64_t i = 0; i < rows; ++i) positions[i] = start + i;
  ABSL_RETURN_IF_ERROR(UploadAngles(positions));  // Every layer rotates at the block's positions.
  float* state = scratch_.state->floats();
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    ABSL_RETURN_IF_ERROR(Layer(l, stream, positions, trace));
    if (trace != nullptr) {
      trace->layer_outputs.emplace_back(rows * h);
      ABSL_RETURN_IF_ERROR(backend_->Download(trace->layer_outputs.back().data(), *scratch_.state,
                                              0, rows * h * kFloat));
    }
  }
  return backend_->RmsNorm(state, h, rows, h, device_.norm->floats(), config_.rms_norm_eps,
                           scratch_.hidden->floats(), h);
}

absl::Status DrafterModel::ConvMix(const DeviceConv& conv, int side, const float* in, int64_t rows,
                                   float* out) const {
  const int64_t h = config_.hidden_size, kc = config_.conv_kernel_size;
  const int64_t side_offset = kc * config_.conv_groups();
  return backend_->DynamicConv(out, in, conv.base_kernel->floats() + side * kc * h,
                               scratch_.dynamic->floats() + side * side_offset,
                               {.rows = rows,
                                .channels = h,
                                .taps = kc,
                                .group_size = config_.conv_group_size,
                                .dynamic_row_stride = 2 * side_offset});
}

absl::Status DrafterModel::Layer(int64_t index, DraftStream& stream,
                                 std::span<const int64_t> positions, BlockTrace* trace) const {
  const DeviceLayer& w = device_.layers[index];
  const LayerAttention& attention = config_.layers[index];
  const int64_t rows = static_cast<int64_t>(positions.size()), width = config_.hidden_size;
  const int64_t nh = config_.num_heads, nkv = config_.num_kv_heads, d = config_.head_dim;
  const int64_t conv_width = 2 * config_.conv_kernel_size * config_.conv_groups();
  const float eps = config_.rms_norm_eps;
  float* h = scratch_.state->floats();
  float* x = scratch_.x->floats();
  float* y = scratch_.y->floats();
  float* out = scratch_.out->floats();
  // Copies the first `floats` of a scratch buffer into the trace (golden tests only).
  const auto record = [&](std::vector<std::vector<float>> BlockTrace::*field,
                          const BufferPtr& buffer, int64_t floats) -> absl::Status {
    if (trace == nullptr) return absl::OkStatus();
    std::vector<float>& host = (trace->*field).emplace_back(floats);
    return backend_->Download(host.data(), *buffer, 0, floats * kFloat);
  };

  // Attention sublayer.
  ABSL_RETURN_IF_ERROR(
      backend_->RmsNorm(h, width, rows, width, w.input_norm->floats(), eps, x, width));
  ABSL_RETURN_IF_ERROR(record(&BlockTrace::attn_norm, scratch_.x, rows * width));
  const float* mixed = x;  // Without a conv the sublayer reads the normed rows as they are.
  if (w.attention_conv) {
    ABSL_RETURN_IF_ERROR(backend_->Linear(x, width, rows, *w.attention_conv->projection,
                                          scratch_.dynamic->floats(), conv_width));
    ABSL_RETURN_IF_ERROR(record(&BlockTrace::attn_dynamic, scratch_.dynamic, rows * conv_width));
    ABSL_RETURN_IF_ERROR(ConvMix(*w.attention_conv, 0, x, rows, y));
    ABSL_RETURN_IF_ERROR(record(&BlockTrace::attn_conv_in, scratch_.y, rows * width));
    mixed = y;
  }
  float* q = scratch_.q->floats();
  ABSL_RETURN_IF_ERROR(ProjectKv(w, mixed, rows, q));
  ABSL_RETURN_IF_ERROR(backend_->RmsNorm(q, d, rows * nh, d, w.q_norm->floats(), eps, q, d));
  ABSL_RETURN_IF_ERROR(
      backend_->Rope(q, nh * d, rows, nh, d, d, scratch_.cos->floats(), scratch_.sin->floats()));
  // Scratch slots past the context: the next context append overwrites them.
  backend::KvCacheHandle& kv = *stream.layers_[index];
  ABSL_RETURN_IF_ERROR(backend_->KvWrite(kv, positions, scratch_.k->floats(), nkv * d,
                                         scratch_.v->floats(), nkv * d));
  const cpu::AttentionShape shape{
      .num_heads = nh,
      .num_kv_heads = nkv,
      .head_dim = d,
      .scale = 1.0f / std::sqrt(static_cast<float>(d)),
      .mask = attention.causal ? cpu::AttentionMask::kCausal : cpu::AttentionMask::kFull,
      .window = attention.sliding_window};
  float* attn = scratch_.attn->floats();
  ABSL_RETURN_IF_ERROR(
      backend_->Attention(shape, q, nh * d, positions, kv, positions.back() + 1, attn, nh * d));
  ABSL_RETURN_IF_ERROR(backend_->Linear(attn, nh * d, rows, *w.o_proj, out, width));
  ABSL_RETURN_IF_ERROR(record(&BlockTrace::attn_out, scratch_.out, rows * width));
  const float* delta = out;
  if (w.attention_conv) {
    ABSL_RETURN_IF_ERROR(ConvMix(*w.attention_conv, 1, out, rows, y));
    ABSL_RETURN_IF_ERROR(record(&BlockTrace::attn_conv_out, scratch_.y, rows * width));
    delta = y;
  }
  // The residual add, then the MLP sublayer's norm.
  ABSL_RETURN_IF_ERROR(
      backend_->AddRmsNorm(h, delta, rows, width, w.post_attention_norm->floats(), eps, x, width));
  ABSL_RETURN_IF_ERROR(record(&BlockTrace::mlp_norm, scratch_.x, rows * width));
  mixed = x;
  if (w.mlp_conv) {
    ABSL_RETURN_IF_ERROR(backend_->Linear(x, width, rows, *w.mlp_conv->projection,
                                          scratch_.dynamic->floats(), conv_width));
    ABSL_RETURN_IF_ERROR(record(&BlockTrace::mlp_dynamic, scratch_.dynamic, rows * conv_width));
    ABSL_RETURN_IF_ERROR(ConvMix(*w.mlp_conv, 0, x, rows, y));
    ABSL_RETURN_IF_ERROR(record(&BlockTrace::mlp_conv_in, scratch_.y, rows * width));
    mixed = y;
  }
  const int64_t inter = config_.intermediate_size;
  float* gate = scratch_.gate->floats();
  float* up = scratch_.up->floats();
  const backend::LinearOutput gate_up[] = {{w.gate_proj.get(), gate, inter},
                                           {w.up_proj.get(), up, inter}};
  ABSL_RETURN_IF_ERROR(backend_->Linears(mixed, width, rows, gate_up));
  ABSL_RETURN_IF_ERROR(backend_->SwiGlu(gate, up, inter, rows, inter, gate, inter));
  ABSL_RETURN_IF_ERROR(backend_->Linear(gate, inter, rows, *w.down_proj, out, width));
  ABSL_RETURN_IF_ERROR(record(&BlockTrace::mlp_out, scratch_.out, rows * width));
  delta = out;
  if (w.mlp_conv) {
    ABSL_RETURN_IF_ERROR(ConvMix(*w.mlp_conv, 1, out, rows, y));
    ABSL_RETURN_IF_ERROR(record(&BlockTrace::mlp_conv_out, scratch_.y, rows * width));
    delta = y;
  }
  return backend_->Add(h, delta, rows * width, h);
}

}  // namespace twinspan::drafter
