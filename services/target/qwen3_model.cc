#include "services/target/qwen3_model.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cpu/rms_norm.h"
#include "services/target/families.h"
#include "services/target/weight_loader.h"

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

}  // namespace

Qwen3Model::Qwen3Model(const TargetConfig& config, const TargetOptions& options,
                       Qwen3Weights weights)
    : DecoderModel(config, options, std::move(weights.embedding), std::move(weights.final_norm),
                   std::move(weights.lm_head)),
      layers_(std::move(weights.layers)) {
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
  return std::unique_ptr<Qwen3Model>(new Qwen3Model(c, options, std::move(weights)));
}

absl::Status Qwen3Model::LayerForward(int64_t layer, LayerState& state, const LayerRows& rows,
                                      float* h) const {
  const Qwen3LayerWeights& w = layers_[layer];
  const int64_t hidden = config().hidden_size;
  const int64_t n = rows.rows * hidden;
  std::vector<float> x(n), sub(n);
  ABSL_RETURN_IF_ERROR(cpu::RmsNorm(ctx(), h, rows.rows, hidden, w.input_norm.data(),
                                    config().rms_norm_eps, x.data()));
  ABSL_RETURN_IF_ERROR(AttentionBlockForward(ctx(), attention_shape_, w.attention, x.data(),
                                             rows.rows, rows.positions, rows.rope_cos,
                                             rows.rope_sin, *state.kv, sub.data()));
  for (int64_t i = 0; i < n; ++i) h[i] += sub[i];
  ABSL_RETURN_IF_ERROR(cpu::RmsNorm(ctx(), h, rows.rows, hidden, w.post_norm.data(),
                                    config().rms_norm_eps, x.data()));
  ABSL_RETURN_IF_ERROR(MlpBlockForward(ctx(), w.mlp, x.data(), rows.rows, sub.data()));
  for (int64_t i = 0; i < n; ++i) h[i] += sub[i];
  return absl::OkStatus();
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
