#include "services/target/qwen3_model.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "services/target/families.h"
#include "services/weights/weight_loader.h"

namespace twinspan::target {
namespace {

absl::Status CheckLinear(const cpu::LinearWeight& w, int64_t out, int64_t in, int64_t layer,
                         const char* name) {
  return CheckLinearShape(w, out, in, "qwen3", layer, name);
}

absl::Status CheckVector(const std::vector<float>& v, int64_t size, int64_t layer,
                         const char* name) {
  return CheckVectorSize(v, size, "qwen3", layer, name);
}

absl::StatusOr<Qwen3LayerWeights> LoadLayer(const TargetConfig& c, const Checkpoint& ckpt,
                                            const std::string& prefix) {
  const int64_t hd = c.head_dim;
  Qwen3LayerWeights w;
  ABSL_ASSIGN_OR_RETURN(w.input_norm,
                        LoadFloats(ckpt, prefix + "input_layernorm.weight", c.hidden_size));
  ABSL_ASSIGN_OR_RETURN(
      w.post_norm, LoadFloats(ckpt, prefix + "post_attention_layernorm.weight", c.hidden_size));
  const std::string attn = prefix + "self_attn.";
  ABSL_ASSIGN_OR_RETURN(w.attention.q_proj,
                        LoadLinear(ckpt, attn + "q_proj", c.num_heads * hd, c.hidden_size));
  ABSL_ASSIGN_OR_RETURN(w.attention.k_proj,
                        LoadLinear(ckpt, attn + "k_proj", c.num_kv_heads * hd, c.hidden_size));
  ABSL_ASSIGN_OR_RETURN(w.attention.v_proj,
                        LoadLinear(ckpt, attn + "v_proj", c.num_kv_heads * hd, c.hidden_size));
  ABSL_ASSIGN_OR_RETURN(w.attention.o_proj,
                        LoadLinear(ckpt, attn + "o_proj", c.hidden_size, c.num_heads * hd));
  ABSL_ASSIGN_OR_RETURN(w.attention.q_norm, LoadFloats(ckpt, attn + "q_norm.weight", hd));
  ABSL_ASSIGN_OR_RETURN(w.attention.k_norm, LoadFloats(ckpt, attn + "k_norm.weight", hd));
  const std::string mlp = prefix + "mlp.";
  ABSL_ASSIGN_OR_RETURN(w.mlp.gate_proj,
                        LoadLinear(ckpt, mlp + "gate_proj", c.intermediate_size, c.hidden_size));
  ABSL_ASSIGN_OR_RETURN(w.mlp.up_proj,
                        LoadLinear(ckpt, mlp + "up_proj", c.intermediate_size, c.hidden_size));
  ABSL_ASSIGN_OR_RETURN(w.mlp.down_proj,
                        LoadLinear(ckpt, mlp + "down_proj", c.hidden_size, c.intermediate_size));
  return w;
}

absl::StatusOr<Qwen3LayerHandles> UploadLayer(backend::Backend& backend,
                                              const Qwen3LayerWeights& w) {
  Qwen3LayerHandles h;
  ABSL_ASSIGN_OR_RETURN(h.input_norm, backend.UploadFloats(w.input_norm));
  ABSL_ASSIGN_OR_RETURN(h.attention, UploadAttentionBlock(backend, w.attention));
  ABSL_ASSIGN_OR_RETURN(h.post_norm, backend.UploadFloats(w.post_norm));
  ABSL_ASSIGN_OR_RETURN(h.mlp, UploadMlpBlock(backend, w.mlp));
  return h;
}

}  // namespace

Qwen3Model::Qwen3Model(const TargetConfig& config, const TargetOptions& options,
                       ModelBackend backend, DecoderHandles weights,
                       std::vector<Qwen3LayerHandles> layers)
    : DecoderModel(config, options, std::move(backend), std::move(weights)),
      layers_(std::move(layers)) {
  attention_shape_.hidden = config.hidden_size;
  attention_shape_.num_heads = config.num_heads;
  attention_shape_.num_kv_heads = config.num_kv_heads;
  attention_shape_.head_dim = config.head_dim;
  attention_shape_.rotary_dim = config.rotary_dim;
  attention_shape_.eps = config.rms_norm_eps;
  attention_shape_.output_gate = false;
}

absl::StatusOr<std::unique_ptr<Qwen3Model>> Qwen3Model::Create(const TargetConfig& c,
                                                               Qwen3Weights weights,
                                                               const TargetOptions& options) {
  ABSL_RETURN_IF_ERROR(options.Validate());
  if (c.family != TargetFamily::kQwen3) {
    return absl::InvalidArgumentError("Qwen3Model: config is not a qwen3 model: " + c.model_type);
  }
  if (weights.embedding.rows() != c.vocab_size || weights.embedding.dim() != c.hidden_size) {
    return absl::InvalidArgumentError(
        absl::StrFormat("qwen3: embedding is [%d, %d], expected [%d, %d]", weights.embedding.rows(),
                        weights.embedding.dim(), c.vocab_size, c.hidden_size));
  }
  if (static_cast<int64_t>(weights.layers.size()) != c.num_layers) {
    return absl::InvalidArgumentError(absl::StrFormat("qwen3: %d layers of weights, config has %d",
                                                      weights.layers.size(), c.num_layers));
  }
  const int64_t hd = c.head_dim;
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const Qwen3LayerWeights& w = weights.layers[i];
    ABSL_RETURN_IF_ERROR(CheckVector(w.input_norm, c.hidden_size, i, "input_layernorm"));
    ABSL_RETURN_IF_ERROR(CheckVector(w.post_norm, c.hidden_size, i, "post_attention_layernorm"));
    ABSL_RETURN_IF_ERROR(CheckVector(w.attention.q_norm, hd, i, "q_norm"));
    ABSL_RETURN_IF_ERROR(CheckVector(w.attention.k_norm, hd, i, "k_norm"));
    ABSL_RETURN_IF_ERROR(
        CheckLinear(w.attention.q_proj, c.num_heads * hd, c.hidden_size, i, "q_proj"));
    ABSL_RETURN_IF_ERROR(
        CheckLinear(w.attention.k_proj, c.num_kv_heads * hd, c.hidden_size, i, "k_proj"));
    ABSL_RETURN_IF_ERROR(
        CheckLinear(w.attention.v_proj, c.num_kv_heads * hd, c.hidden_size, i, "v_proj"));
    ABSL_RETURN_IF_ERROR(
        CheckLinear(w.attention.o_proj, c.hidden_size, c.num_heads * hd, i, "o_proj"));
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
  std::vector<Qwen3LayerHandles> layers;
  for (const Qwen3LayerWeights& w : weights.layers) {
    ABSL_ASSIGN_OR_RETURN(Qwen3LayerHandles layer, UploadLayer(*backend.backend, w));
    layers.push_back(std::move(layer));
  }
  return std::unique_ptr<Qwen3Model>(
      new Qwen3Model(c, options, std::move(backend), std::move(shared), std::move(layers)));
}

absl::Status Qwen3Model::LayerForward(int64_t layer, absl::Span<LayerState* const> states,
                                      const LayerRows& rows, float* h) const {
  const Qwen3LayerHandles& w = layers_[layer];
  backend::Backend& be = backend();
  const int64_t hidden = config().hidden_size, n = rows.rows * hidden;
  const float eps = config().rms_norm_eps;
  ABSL_ASSIGN_OR_RETURN(auto x, be.AllocateFloats(n));    // A sublayer's normed input.
  ABSL_ASSIGN_OR_RETURN(auto sub, be.AllocateFloats(n));  // A sublayer's output.
  ABSL_RETURN_IF_ERROR(
      be.RmsNorm(h, hidden, rows.rows, hidden, w.input_norm->floats(), eps, x->floats(), hidden));
  ABSL_RETURN_IF_ERROR(AttentionBlockForward(be, attention_shape_, w.attention, x->floats(), rows,
                                             states, sub->floats()));
  ABSL_RETURN_IF_ERROR(be.AddRmsNorm(h, sub->floats(), rows.rows, hidden, w.post_norm->floats(),
                                     eps, x->floats(), hidden));
  ABSL_RETURN_IF_ERROR(MlpBlockForward(be, w.mlp, x->floats(), rows.rows, sub->floats()));
  return be.Add(h, sub->floats(), n, h);
}

absl::StatusOr<std::unique_ptr<TargetModel>> OpenQwen3Model(
    const TargetConfig& c, std::shared_ptr<const Checkpoint> checkpoint,
    const TargetOptions& options) {
  const Checkpoint& ckpt = *checkpoint;
  const std::string prefix = TextModelPrefix(ckpt);
  Qwen3Weights weights;
  ABSL_ASSIGN_OR_RETURN(weights.embedding, LoadEmbedding(ckpt, prefix + "embed_tokens.weight",
                                                         c.vocab_size, c.hidden_size));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    ABSL_ASSIGN_OR_RETURN(Qwen3LayerWeights layer,
                          LoadLayer(c, ckpt, absl::StrFormat("%slayers.%d.", prefix, i)));
    weights.layers.push_back(std::move(layer));
  }
  ABSL_ASSIGN_OR_RETURN(weights.final_norm,
                        LoadFloats(ckpt, prefix + "norm.weight", c.hidden_size));
  if (c.tie_word_embeddings && !ckpt.Has("lm_head.weight") && !ckpt.Has("lm_head.trellis")) {
    ABSL_ASSIGN_OR_RETURN(weights.lm_head, cpu::LinearWeight::Dense(c.vocab_size, c.hidden_size,
                                                                    weights.embedding.ToFloat()));
  } else {
    ABSL_ASSIGN_OR_RETURN(weights.lm_head,
                          LoadLinear(ckpt, "lm_head", c.vocab_size, c.hidden_size));
  }
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<Qwen3Model> model,
                        Qwen3Model::Create(c, std::move(weights), options));
  model->KeepAlive(std::move(checkpoint));
  return std::unique_ptr<TargetModel>(std::move(model));
}

}  // namespace twinspan::target
