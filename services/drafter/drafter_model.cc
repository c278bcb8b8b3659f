#include "services/drafter/drafter_model.h"

#include <cmath>
#include <span>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/safetensors/checkpoint.h"
#include "common/status.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/dynamic_conv.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/swiglu.h"

namespace twinspan::drafter {
namespace {

// The dynamic conv's per-row kernels: [rows, 2 sides, Kc, G] from one projection of the normed x.
struct ConvKernels {
  std::vector<float> dynamic;
  int64_t row_stride = 0;   // 2 * Kc * G
  int64_t side_offset = 0;  // Kc * G
};

absl::Status ConvMix(const cpu::Context& ctx, const DrafterConfig& config,
                     const DynamicConvWeights& conv, const ConvKernels& kernels, int side,
                     const std::vector<float>& in, int64_t rows, std::vector<float>& out) {
  const int64_t h = config.hidden_size, kc = config.conv_kernel_size;
  out.resize(rows * h);
  const std::span<const float> dynamic(kernels.dynamic);
  return cpu::DynamicConv(ctx, out, in,
                          std::span<const float>(conv.base_kernel).subspan(side * kc * h, kc * h),
                          dynamic.subspan(side * kernels.side_offset),
                          {.rows = rows,
                           .channels = h,
                           .taps = kc,
                           .group_size = config.conv_group_size,
                           .dynamic_row_stride = kernels.row_stride});
}

absl::StatusOr<ConvKernels> ConvPrepare(const cpu::Context& ctx, const DrafterConfig& config,
                                        const DynamicConvWeights& conv, const std::vector<float>& x,
                                        int64_t rows) {
  ConvKernels kernels;
  kernels.side_offset = config.conv_kernel_size * config.conv_groups();
  kernels.row_stride = 2 * kernels.side_offset;
  kernels.dynamic.resize(rows * kernels.row_stride);
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx, x.data(), rows, conv.projection, kernels.dynamic.data()));
  return kernels;
}

}  // namespace

DrafterModel::DrafterModel(DrafterConfig config, DrafterWeights weights,
                           const DrafterModelOptions& options)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      options_(options),
      ctx_{.pool = options.pool} {}

absl::StatusOr<std::unique_ptr<DrafterModel>> DrafterModel::Create(
    DrafterConfig config, DrafterWeights weights, const DrafterModelOptions& options) {
  if (options.context < config.block_size) {
    return absl::InvalidArgumentError(
        absl::StrFormat("DrafterModelOptions.context = %d is below the block size %d",
                        options.context, config.block_size));
  }
  if (static_cast<int64_t>(weights.layers.size()) != config.num_layers ||
      (config.kind == DrafterKind::kDFlash2) != weights.selector.has_value()) {
    return absl::InvalidArgumentError("DrafterModel: weights were not loaded for this config");
  }
  return std::unique_ptr<DrafterModel>(
      new DrafterModel(std::move(config), std::move(weights), options));
}

absl::StatusOr<std::unique_ptr<DrafterModel>> DrafterModel::Open(const std::string& dir,
                                                                 const DrafterModelOptions& options,
                                                                 bool as_dflash_v1) {
  ABSL_ASSIGN_OR_RETURN(DrafterConfig config, LoadDrafterConfig(dir));
  if (as_dflash_v1) config.kind = DrafterKind::kDFlash;
  ABSL_ASSIGN_OR_RETURN(const std::unique_ptr<Checkpoint> checkpoint, Checkpoint::Open(dir));
  ABSL_ASSIGN_OR_RETURN(DrafterWeights weights,
                        LoadDrafterWeights(*checkpoint, config, options.linear_bits));
  return Create(std::move(config), std::move(weights), options);
}

absl::StatusOr<std::unique_ptr<DraftStream>> DrafterModel::NewStream() const {
  std::vector<cpu::KvCache> layers;
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    ABSL_ASSIGN_OR_RETURN(cpu::KvCache kv,
                          cpu::KvCache::Create(options_.kv_dtype, options_.context,
                                               config_.num_kv_heads, config_.head_dim));
    layers.push_back(std::move(kv));
  }
  return std::make_unique<DraftStream>(std::move(layers), options_.context);
}

absl::Status DrafterModel::FuseTaps(const float* raw, int64_t rows, float* fused) const {
  if (rows < 0) {
    return absl::InvalidArgumentError(absl::StrFormat("FuseTaps: rows = %d is negative", rows));
  }
  if (rows == 0) return absl::OkStatus();
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx_, raw, rows, weights_.fc, fused));
  return cpu::RmsNorm(ctx_, fused, rows, config_.hidden_size, weights_.hidden_norm.data(),
                      config_.rms_norm_eps, fused);
}

absl::Status DrafterModel::ProjectKv(const DrafterLayerWeights& layer, const float* x, int64_t rows,
                                     const int64_t* positions, std::vector<float>& k,
                                     std::vector<float>& v) const {
  const int64_t d = config_.head_dim, nkv = config_.num_kv_heads;
  k.resize(rows * nkv * d);
  v.resize(rows * nkv * d);
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx_, x, rows, layer.k_proj, k.data()));
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx_, x, rows, layer.v_proj, v.data()));
  ABSL_RETURN_IF_ERROR(cpu::RmsNorm(ctx_, k.data(), rows * nkv, d, layer.k_norm.data(),
                                    config_.rms_norm_eps, k.data()));
  std::vector<float> cos(rows * d / 2), sin(rows * d / 2);
  ABSL_RETURN_IF_ERROR(
      cpu::RopeAngles(positions, rows, d, config_.rope_theta, cos.data(), sin.data()));
  return cpu::Rope(ctx_, k.data(), nkv * d, rows, nkv, d, d, cos.data(), sin.data());
}

absl::Status DrafterModel::AppendContext(DraftStream& stream, const float* fused,
                                         int64_t rows) const {
  if (rows < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("AppendContext: rows = %d is negative", rows));
  }
  const int64_t start = stream.context_length_;
  if (start + rows > stream.capacity_) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("AppendContext: %d context rows after %d exceed the stream's %d positions",
                        rows, start, stream.capacity_));
  }
  std::vector<int64_t> positions(rows);
  for (int64_t i = 0; i < rows; ++i) positions[i] = start + i;
  const int64_t kv_width = config_.num_kv_heads * config_.head_dim;
  std::vector<float> k, v;
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    // The context is not layer-normed: each layer projects the same fused rows.
    ABSL_RETURN_IF_ERROR(ProjectKv(weights_.layers[l], fused, rows, positions.data(), k, v));
    for (int64_t i = 0; i < rows; ++i) {
      ABSL_RETURN_IF_ERROR(
          stream.layers_[l].Write(start + i, k.data() + i * kv_width, v.data() + i * kv_width));
    }
  }
  stream.context_length_ = start + rows;
  return absl::OkStatus();
}

absl::Status DrafterModel::ForwardBlock(DraftStream& stream, const float* embeddings, int64_t rows,
                                        float* hidden, BlockTrace* trace) const {
  const int64_t start = stream.context_length_, h = config_.hidden_size;
  if (rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ForwardBlock: rows = %d must be >= 1", rows));
  }
  if (start + rows > stream.capacity_) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "ForwardBlock: a block of %d after %d context rows exceeds the stream's %d positions", rows,
        start, stream.capacity_));
  }
  if (trace != nullptr) *trace = BlockTrace{};
  std::vector<int64_t> positions(rows);
  for (int64_t i = 0; i < rows; ++i) positions[i] = start + i;
  std::vector<float> state(embeddings, embeddings + rows * h);
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    ABSL_RETURN_IF_ERROR(Layer(l, stream, positions, state, trace));
    if (trace != nullptr) trace->layer_outputs.push_back(state);
  }
  return cpu::RmsNorm(ctx_, state.data(), rows, h, weights_.norm.data(), config_.rms_norm_eps,
                      hidden);
}

absl::Status DrafterModel::Layer(int64_t index, DraftStream& stream,
                                 const std::vector<int64_t>& positions, std::vector<float>& h,
                                 BlockTrace* trace) const {
  const DrafterLayerWeights& w = weights_.layers[index];
  const LayerAttention& attention = config_.layers[index];
  const int64_t rows = static_cast<int64_t>(positions.size()), width = config_.hidden_size;
  const int64_t nh = config_.num_heads, nkv = config_.num_kv_heads, d = config_.head_dim;
  const float eps = config_.rms_norm_eps;
  const auto record = [trace](std::vector<std::vector<float>> BlockTrace::*field,
                              const std::vector<float>& value) {
    if (trace != nullptr) (trace->*field).push_back(value);
  };

  // Attention sublayer.
  std::vector<float> x(rows * width), y, out;
  ABSL_RETURN_IF_ERROR(
      cpu::RmsNorm(ctx_, h.data(), rows, width, w.input_norm.data(), eps, x.data()));
  record(&BlockTrace::attn_norm, x);
  ConvKernels attn_kernels;
  if (w.attention_conv) {
    ABSL_ASSIGN_OR_RETURN(attn_kernels, ConvPrepare(ctx_, config_, *w.attention_conv, x, rows));
    record(&BlockTrace::attn_dynamic, attn_kernels.dynamic);
    ABSL_RETURN_IF_ERROR(ConvMix(ctx_, config_, *w.attention_conv, attn_kernels, 0, x, rows, y));
    record(&BlockTrace::attn_conv_in, y);
  } else {
    y = x;
  }
  std::vector<float> q(rows * nh * d), k, v;
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx_, y.data(), rows, w.q_proj, q.data()));
  ABSL_RETURN_IF_ERROR(cpu::RmsNorm(ctx_, q.data(), rows * nh, d, w.q_norm.data(), eps, q.data()));
  std::vector<float> cos(rows * d / 2), sin(rows * d / 2);
  ABSL_RETURN_IF_ERROR(
      cpu::RopeAngles(positions.data(), rows, d, config_.rope_theta, cos.data(), sin.data()));
  ABSL_RETURN_IF_ERROR(cpu::Rope(ctx_, q.data(), nh * d, rows, nh, d, d, cos.data(), sin.data()));
  ABSL_RETURN_IF_ERROR(ProjectKv(w, y.data(), rows, positions.data(), k, v));
  cpu::KvCache& kv = stream.layers_[index];
  for (int64_t i = 0; i < rows; ++i) {  // Scratch slots: the next context append overwrites them.
    ABSL_RETURN_IF_ERROR(kv.Write(positions[i], k.data() + i * nkv * d, v.data() + i * nkv * d));
  }
  std::vector<float> attn(rows * nh * d);
  const cpu::AttentionShape shape{
      .num_heads = nh,
      .num_kv_heads = nkv,
      .head_dim = d,
      .scale = 1.0f / std::sqrt(static_cast<float>(d)),
      .mask = attention.causal ? cpu::AttentionMask::kCausal : cpu::AttentionMask::kFull,
      .window = attention.sliding_window};
  ABSL_RETURN_IF_ERROR(cpu::Attention(ctx_, shape, q.data(), nh * d, positions.data(), rows, kv,
                                      positions.back() + 1, attn.data(), nh * d));
  out.resize(rows * width);
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx_, attn.data(), rows, w.o_proj, out.data()));
  record(&BlockTrace::attn_out, out);
  if (w.attention_conv) {
    ABSL_RETURN_IF_ERROR(ConvMix(ctx_, config_, *w.attention_conv, attn_kernels, 1, out, rows, y));
    out.swap(y);
    record(&BlockTrace::attn_conv_out, out);
  }
  for (int64_t i = 0; i < rows * width; ++i) h[i] += out[i];

  // MLP sublayer.
  ABSL_RETURN_IF_ERROR(
      cpu::RmsNorm(ctx_, h.data(), rows, width, w.post_attention_norm.data(), eps, x.data()));
  record(&BlockTrace::mlp_norm, x);
  ConvKernels mlp_kernels;
  if (w.mlp_conv) {
    ABSL_ASSIGN_OR_RETURN(mlp_kernels, ConvPrepare(ctx_, config_, *w.mlp_conv, x, rows));
    record(&BlockTrace::mlp_dynamic, mlp_kernels.dynamic);
    ABSL_RETURN_IF_ERROR(ConvMix(ctx_, config_, *w.mlp_conv, mlp_kernels, 0, x, rows, y));
    record(&BlockTrace::mlp_conv_in, y);
  } else {
    y = x;
  }
  const int64_t inter = config_.intermediate_size;
  std::vector<float> gate(rows * inter), up(rows * inter);
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx_, y.data(), rows, w.gate_proj, gate.data()));
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx_, y.data(), rows, w.up_proj, up.data()));
  ABSL_RETURN_IF_ERROR(
      cpu::SwiGlu(ctx_, gate.data(), up.data(), inter, rows, inter, gate.data(), inter));
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx_, gate.data(), rows, w.down_proj, out.data()));
  record(&BlockTrace::mlp_out, out);
  if (w.mlp_conv) {
    ABSL_RETURN_IF_ERROR(ConvMix(ctx_, config_, *w.mlp_conv, mlp_kernels, 1, out, rows, y));
    out.swap(y);
    record(&BlockTrace::mlp_conv_out, out);
  }
  for (int64_t i = 0; i < rows * width; ++i) h[i] += out[i];
  return absl::OkStatus();
}

}  // namespace twinspan::drafter
