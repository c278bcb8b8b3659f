#include "services/target/qwen3_5_model.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "services/target/families.h"
#include "services/weights/weight_loader.h"

namespace twinspan::target {
namespace {

absl::Status CheckLinear(const cpu::LinearWeight& w, int64_t out, int64_t in, int64_t layer,
                         const char* name) {
  return CheckLinearShape(w, out, in, "qwen3_5", layer, name);
}

absl::Status CheckVector(const std::vector<float>& v, int64_t size, int64_t layer,
                         const char* name) {
  return CheckVectorSize(v, size, "qwen3_5", layer, name);
}

GdnBlockShape GdnShapeOf(const TargetConfig& c) {
  GdnBlockShape s;
  s.hidden = c.hidden_size;
  s.dims.k_heads = c.linear_num_key_heads;
  s.dims.v_heads = c.linear_num_value_heads;
  s.dims.k_dim = c.linear_key_head_dim;
  s.dims.v_dim = c.linear_value_head_dim;
  s.conv_kernel = c.linear_conv_kernel_dim;
  s.eps = c.rms_norm_eps;
  return s;
}

absl::Status CheckAttention(const TargetConfig& c, const AttentionBlockWeights& w, int64_t i) {
  const int64_t hd = c.head_dim;
  ABSL_RETURN_IF_ERROR(CheckVector(w.q_norm, hd, i, "q_norm"));
  ABSL_RETURN_IF_ERROR(CheckVector(w.k_norm, hd, i, "k_norm"));
  ABSL_RETURN_IF_ERROR(CheckLinear(w.q_proj, (c.attn_output_gate ? 2 : 1) * c.num_heads * hd,
                                   c.hidden_size, i, "q_proj"));
  ABSL_RETURN_IF_ERROR(CheckLinear(w.k_proj, c.num_kv_heads * hd, c.hidden_size, i, "k_proj"));
  ABSL_RETURN_IF_ERROR(CheckLinear(w.v_proj, c.num_kv_heads * hd, c.hidden_size, i, "v_proj"));
  return CheckLinear(w.o_proj, c.hidden_size, c.num_heads * hd, i, "o_proj");
}

absl::Status CheckGdn(const GdnBlockShape& s, const GdnBlockWeights& w, int64_t i) {
  const int64_t v_heads = s.dims.v_heads;
  ABSL_RETURN_IF_ERROR(CheckLinear(w.in_proj_qkv, s.conv_channels(), s.hidden, i, "in_proj_qkv"));
  ABSL_RETURN_IF_ERROR(CheckLinear(w.in_proj_z, s.value_width(), s.hidden, i, "in_proj_z"));
  ABSL_RETURN_IF_ERROR(CheckLinear(w.in_proj_a, v_heads, s.hidden, i, "in_proj_a"));
  ABSL_RETURN_IF_ERROR(CheckLinear(w.in_proj_b, v_heads, s.hidden, i, "in_proj_b"));
  ABSL_RETURN_IF_ERROR(CheckVector(w.conv, s.conv_channels() * s.conv_kernel, i, "conv1d"));
  ABSL_RETURN_IF_ERROR(CheckVector(w.a_log, v_heads, i, "A_log"));
  ABSL_RETURN_IF_ERROR(CheckVector(w.dt_bias, v_heads, i, "dt_bias"));
  ABSL_RETURN_IF_ERROR(CheckVector(w.norm, s.dims.v_dim, i, "linear_attn.norm"));
  return CheckLinear(w.out_proj, s.hidden, s.value_width(), i, "out_proj");
}

absl::StatusOr<std::vector<float>> LoadCentredNorm(const Checkpoint& ckpt, const std::string& name,
                                                   int64_t size) {
  ABSL_ASSIGN_OR_RETURN(std::vector<float> w, LoadFloats(ckpt, name, size));
  return OnePlus(std::move(w));
}

absl::Status LoadAttention(const TargetConfig& c, const Checkpoint& ckpt, const std::string& p,
                           AttentionBlockWeights& w) {
  const int64_t hd = c.head_dim;
  const int64_t q_rows = (c.attn_output_gate ? 2 : 1) * c.num_heads * hd;
  ABSL_ASSIGN_OR_RETURN(w.q_proj, LoadLinear(ckpt, p + "q_proj", q_rows, c.hidden_size));
  ABSL_ASSIGN_OR_RETURN(w.k_proj,
                        LoadLinear(ckpt, p + "k_proj", c.num_kv_heads * hd, c.hidden_size));
  ABSL_ASSIGN_OR_RETURN(w.v_proj,
                        LoadLinear(ckpt, p + "v_proj", c.num_kv_heads * hd, c.hidden_size));
  ABSL_ASSIGN_OR_RETURN(w.o_proj, LoadLinear(ckpt, p + "o_proj", c.hidden_size, c.num_heads * hd));
  ABSL_ASSIGN_OR_RETURN(w.q_norm, LoadCentredNorm(ckpt, p + "q_norm.weight", hd));
  ABSL_ASSIGN_OR_RETURN(w.k_norm, LoadCentredNorm(ckpt, p + "k_norm.weight", hd));
  return absl::OkStatus();
}

absl::Status LoadGdn(const GdnBlockShape& s, const Checkpoint& ckpt, const std::string& p,
                     GdnBlockWeights& w) {
  const int64_t v_heads = s.dims.v_heads;
  ABSL_ASSIGN_OR_RETURN(w.in_proj_qkv,
                        LoadLinear(ckpt, p + "in_proj_qkv", s.conv_channels(), s.hidden));
  ABSL_ASSIGN_OR_RETURN(w.in_proj_z, LoadLinear(ckpt, p + "in_proj_z", s.value_width(), s.hidden));
  ABSL_ASSIGN_OR_RETURN(w.in_proj_a, LoadLinear(ckpt, p + "in_proj_a", v_heads, s.hidden));
  ABSL_ASSIGN_OR_RETURN(w.in_proj_b, LoadLinear(ckpt, p + "in_proj_b", v_heads, s.hidden));
  ABSL_ASSIGN_OR_RETURN(w.conv,
                        LoadFloats(ckpt, p + "conv1d.weight", s.conv_channels() * s.conv_kernel));
  ABSL_ASSIGN_OR_RETURN(w.a_log, LoadFloats(ckpt, p + "A_log", v_heads));
  ABSL_ASSIGN_OR_RETURN(w.dt_bias, LoadFloats(ckpt, p + "dt_bias", v_heads));
  ABSL_ASSIGN_OR_RETURN(w.norm, LoadFloats(ckpt, p + "norm.weight", s.dims.v_dim));
  ABSL_ASSIGN_OR_RETURN(w.out_proj, LoadLinear(ckpt, p + "out_proj", s.hidden, s.value_width()));
  return absl::OkStatus();
}

absl::StatusOr<Qwen35LayerWeights> LoadLayer(const TargetConfig& c, const Checkpoint& ckpt,
                                             int64_t i, const std::string& prefix) {
  Qwen35LayerWeights w;
  ABSL_ASSIGN_OR_RETURN(w.input_norm,
                        LoadCentredNorm(ckpt, prefix + "input_layernorm.weight", c.hidden_size));
  ABSL_ASSIGN_OR_RETURN(
      w.post_norm,
      LoadCentredNorm(ckpt, prefix + "post_attention_layernorm.weight", c.hidden_size));
  if (c.layer_types[i] == LayerType::kFullAttention) {
    ABSL_RETURN_IF_ERROR(LoadAttention(c, ckpt, prefix + "self_attn.", w.attention));
  } else {
    ABSL_RETURN_IF_ERROR(LoadGdn(GdnShapeOf(c), ckpt, prefix + "linear_attn.", w.gdn));
  }
  const std::string mlp = prefix + "mlp.";
  ABSL_ASSIGN_OR_RETURN(w.mlp.gate_proj,
                        LoadLinear(ckpt, mlp + "gate_proj", c.intermediate_size, c.hidden_size));
  ABSL_ASSIGN_OR_RETURN(w.mlp.up_proj,
                        LoadLinear(ckpt, mlp + "up_proj", c.intermediate_size, c.hidden_size));
  ABSL_ASSIGN_OR_RETURN(w.mlp.down_proj,
                        LoadLinear(ckpt, mlp + "down_proj", c.hidden_size, c.intermediate_size));
  return w;
}

absl::StatusOr<Qwen35LayerHandles> UploadLayer(backend::Backend& backend, const TargetConfig& c,
                                               int64_t i, const Qwen35LayerWeights& w) {
  Qwen35LayerHandles h;
  ABSL_ASSIGN_OR_RETURN(h.input_norm, backend.UploadFloats(w.input_norm));
  if (c.layer_types[i] == LayerType::kFullAttention) {
    ABSL_ASSIGN_OR_RETURN(h.attention, UploadAttentionBlock(backend, w.attention));
  } else {
    ABSL_ASSIGN_OR_RETURN(h.gdn, UploadGdnBlock(backend, w.gdn));
  }
  ABSL_ASSIGN_OR_RETURN(h.post_norm, backend.UploadFloats(w.post_norm));
  ABSL_ASSIGN_OR_RETURN(h.mlp, UploadMlpBlock(backend, w.mlp));
  return h;
}

}  // namespace

Qwen35Model::Qwen35Model(const TargetConfig& config, const TargetOptions& options,
                         ModelBackend backend, DecoderHandles weights,
                         std::vector<Qwen35LayerHandles> layers)
    : DecoderModel(config, options, std::move(backend), std::move(weights)),
      gdn_shape_(GdnShapeOf(config)),
      layers_(std::move(layers)) {
  attention_shape_.hidden = config.hidden_size;
  attention_shape_.num_heads = config.num_heads;
  attention_shape_.num_kv_heads = config.num_kv_heads;
  attention_shape_.head_dim = config.head_dim;
  attention_shape_.rotary_dim = config.rotary_dim;
  attention_shape_.eps = config.rms_norm_eps;
  attention_shape_.output_gate = config.attn_output_gate;
}

absl::StatusOr<std::unique_ptr<Qwen35Model>> Qwen35Model::Create(const TargetConfig& c,
                                                                 Qwen35Weights weights,
                                                                 const TargetOptions& options) {
  ABSL_RETURN_IF_ERROR(options.Validate());
  if (c.family != TargetFamily::kQwen35) {
    return absl::InvalidArgumentError("Qwen35Model: config is not a qwen3_5 model: " +
                                      c.model_type);
  }
  if (c.is_moe()) {
    return absl::UnimplementedError(absl::StrFormat(
        "qwen3_5: mixture-of-experts checkpoints (%d experts) are not supported", c.num_experts));
  }
  if (c.linear_conv_kernel_dim < 1 || c.linear_key_head_dim <= 0 || c.linear_value_head_dim <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "qwen3_5: linear_conv_kernel_dim %d, linear_key_head_dim %d, linear_value_head_dim %d "
        "must be positive",
        c.linear_conv_kernel_dim, c.linear_key_head_dim, c.linear_value_head_dim));
  }
  if (weights.embedding.rows() != c.vocab_size || weights.embedding.dim() != c.hidden_size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "qwen3_5: embedding is [%d, %d], expected [%d, %d]", weights.embedding.rows(),
        weights.embedding.dim(), c.vocab_size, c.hidden_size));
  }
  if (static_cast<int64_t>(weights.layers.size()) != c.num_layers ||
      static_cast<int64_t>(c.layer_types.size()) != c.num_layers) {
    return absl::InvalidArgumentError(
        absl::StrFormat("qwen3_5: %d layers of weights and %d layer_types, config has %d layers",
                        weights.layers.size(), c.layer_types.size(), c.num_layers));
  }
  const GdnBlockShape gdn = GdnShapeOf(c);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const Qwen35LayerWeights& w = weights.layers[i];
    ABSL_RETURN_IF_ERROR(CheckVector(w.input_norm, c.hidden_size, i, "input_layernorm"));
    ABSL_RETURN_IF_ERROR(CheckVector(w.post_norm, c.hidden_size, i, "post_attention_layernorm"));
    if (c.layer_types[i] == LayerType::kFullAttention) {
      ABSL_RETURN_IF_ERROR(CheckAttention(c, w.attention, i));
    } else {
      ABSL_RETURN_IF_ERROR(CheckGdn(gdn, w.gdn, i));
    }
    ABSL_RETURN_IF_ERROR(
        CheckLinear(w.mlp.gate_proj, c.intermediate_size, c.hidden_size, i, "gate_proj"));
    ABSL_RETURN_IF_ERROR(
        CheckLinear(w.mlp.up_proj, c.intermediate_size, c.hidden_size, i, "up_proj"));
    ABSL_RETURN_IF_ERROR(
        CheckLinear(w.mlp.down_proj, c.hidden_size, c.intermediate_size, i, "down_proj"));
  }
  ABSL_RETURN_IF_ERROR(CheckVector(weights.final_norm, c.hidden_size, -1, "norm"));
  ABSL_RETURN_IF_ERROR(CheckLinear(weights.lm_head, c.vocab_size, c.hidden_size, -1, "lm_head"));
  ModelBackend backend = ModelBackend::For(options);  // First: outlives the handles below.
  ABSL_ASSIGN_OR_RETURN(DecoderHandles shared,
                        DecoderHandles::Upload(*backend.backend, weights.embedding,
                                               weights.final_norm, weights.lm_head));
  std::vector<Qwen35LayerHandles> layers;
  for (int64_t i = 0; i < c.num_layers; ++i) {
    ABSL_ASSIGN_OR_RETURN(Qwen35LayerHandles layer,
                          UploadLayer(*backend.backend, c, i, weights.layers[i]));
    layers.push_back(std::move(layer));
  }
  return std::unique_ptr<Qwen35Model>(
      new Qwen35Model(c, options, std::move(backend), std::move(shared), std::move(layers)));
}

absl::StatusOr<LayerState> Qwen35Model::NewLayerState(int64_t layer) const {
  if (config().layer_types[layer] == LayerType::kFullAttention) {
    return DecoderModel::NewLayerState(layer);
  }
  LayerState state;
  ABSL_ASSIGN_OR_RETURN(state.recurrent, NewGdnState(backend(), gdn_shape_));
  return state;
}

absl::Status Qwen35Model::CommitLayer(int64_t layer, LayerState& state,
                                      absl::Span<const int64_t> path, int64_t pending) const {
  if (config().layer_types[layer] == LayerType::kFullAttention) return absl::OkStatus();
  return GdnBlockCommit(backend(), gdn_shape_, layers_[layer].gdn, *state.recurrent, path, pending);
}

absl::Status Qwen35Model::LayerForward(int64_t layer, absl::Span<LayerState* const> states,
                                       const LayerRows& rows, float* h) const {
  const Qwen35LayerHandles& w = layers_[layer];
  backend::Backend& be = backend();
  const int64_t hidden = config().hidden_size, n = rows.rows * hidden;
  const float eps = config().rms_norm_eps;
  ABSL_ASSIGN_OR_RETURN(auto x, be.AllocateFloats(n));    // A sublayer's normed input.
  ABSL_ASSIGN_OR_RETURN(auto sub, be.AllocateFloats(n));  // A sublayer's output.
  ABSL_RETURN_IF_ERROR(
      be.RmsNorm(h, hidden, rows.rows, hidden, w.input_norm->floats(), eps, x->floats(), hidden));
  ABSL_RETURN_IF_ERROR(
      config().layer_types[layer] == LayerType::kFullAttention
          ? AttentionBlockForward(be, attention_shape_, w.attention, x->floats(), rows, states,
                                  sub->floats())
          : GdnBlockForward(be, gdn_shape_, w.gdn, x->floats(), rows, states, sub->floats()));
  ABSL_RETURN_IF_ERROR(be.AddRmsNorm(h, sub->floats(), rows.rows, hidden, w.post_norm->floats(),
                                     eps, x->floats(), hidden));
  ABSL_RETURN_IF_ERROR(MlpBlockForward(be, w.mlp, x->floats(), rows.rows, sub->floats()));
  return be.Add(h, sub->floats(), n, h);
}

absl::StatusOr<std::unique_ptr<TargetModel>> OpenQwen35Model(
    const TargetConfig& c, std::shared_ptr<const Checkpoint> checkpoint,
    const TargetOptions& options) {
  const Checkpoint& ckpt = *checkpoint;
  // "model.language_model." (the published wrapper, EXL3 conversions) or "model." (qwen3_5_text).
  // The vision tower and the MTP head ("mtp.") are never read.
  const std::string prefix = TextModelPrefix(ckpt);
  Qwen35Weights weights;
  ABSL_ASSIGN_OR_RETURN(weights.embedding, LoadEmbedding(ckpt, prefix + "embed_tokens.weight",
                                                         c.vocab_size, c.hidden_size));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    ABSL_ASSIGN_OR_RETURN(Qwen35LayerWeights layer,
                          LoadLayer(c, ckpt, i, absl::StrFormat("%slayers.%d.", prefix, i)));
    weights.layers.push_back(std::move(layer));
  }
  ABSL_ASSIGN_OR_RETURN(weights.final_norm,
                        LoadCentredNorm(ckpt, prefix + "norm.weight", c.hidden_size));
  if (c.tie_word_embeddings && !ckpt.Has("lm_head.weight") && !ckpt.Has("lm_head.trellis")) {
    ABSL_ASSIGN_OR_RETURN(weights.lm_head, cpu::LinearWeight::Dense(c.vocab_size, c.hidden_size,
                                                                    weights.embedding.ToFloat()));
  } else {
    ABSL_ASSIGN_OR_RETURN(weights.lm_head,
                          LoadLinear(ckpt, "lm_head", c.vocab_size, c.hidden_size));
  }
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<Qwen35Model> model,
                        Qwen35Model::Create(c, std::move(weights), options));
  model->KeepAlive(std::move(checkpoint));  // EXL3 weights view the mapped file.
  return std::unique_ptr<TargetModel>(std::move(model));
}

}  // namespace twinspan::target
