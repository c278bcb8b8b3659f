#include "services/drafter/drafter_weights.h"

#include <cstring>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "services/weights/drafter_linear.h"

namespace twinspan::drafter {
namespace {

std::string ShapeString(const std::vector<int64_t>& shape) {
  return "[" + absl::StrJoin(shape, ", ") + "]";
}

// The float tensor `name` with exactly `shape`.
absl::StatusOr<std::vector<float>> LoadExact(const Checkpoint& checkpoint, const std::string& name,
                                             const std::vector<int64_t>& shape) {
  ABSL_ASSIGN_OR_RETURN(const TensorView view, checkpoint.Get(name));
  if (view.shape != shape) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: tensor %s has shape %s, expected %s",
                                                      checkpoint.path(), name,
                                                      ShapeString(view.shape), ShapeString(shape)));
  }
  return checkpoint.Floats(name);
}

absl::StatusOr<DynamicConvWeights> LoadConv(const Checkpoint& checkpoint, const std::string& prefix,
                                            const DrafterConfig& config, LinearBits bits) {
  DynamicConvWeights conv;
  const int64_t kc = config.conv_kernel_size, h = config.hidden_size;
  ABSL_ASSIGN_OR_RETURN(conv.base_kernel,
                        LoadExact(checkpoint, prefix + ".base_kernel", {2, kc, h}));
  ABSL_ASSIGN_OR_RETURN(conv.projection,
                        LoadDrafterLinear(checkpoint, prefix + ".kernel_projection",
                                          2 * kc * config.conv_groups(), h, bits));
  return conv;
}

absl::StatusOr<DrafterLayerWeights> LoadLayer(const Checkpoint& checkpoint, int64_t index,
                                              const DrafterConfig& config, LinearBits bits) {
  const std::string p = absl::StrFormat("layers.%d.", index);
  const int64_t h = config.hidden_size, d = config.head_dim, i = config.intermediate_size;
  DrafterLayerWeights layer;
  ABSL_ASSIGN_OR_RETURN(layer.input_norm, LoadExact(checkpoint, p + "input_layernorm.weight", {h}));
  ABSL_ASSIGN_OR_RETURN(layer.post_attention_norm,
                        LoadExact(checkpoint, p + "post_attention_layernorm.weight", {h}));
  ABSL_ASSIGN_OR_RETURN(layer.q_norm, LoadExact(checkpoint, p + "self_attn.q_norm.weight", {d}));
  ABSL_ASSIGN_OR_RETURN(layer.k_norm, LoadExact(checkpoint, p + "self_attn.k_norm.weight", {d}));
  ABSL_ASSIGN_OR_RETURN(layer.q_proj, LoadDrafterLinear(checkpoint, p + "self_attn.q_proj",
                                                        config.num_heads * d, h, bits));
  ABSL_ASSIGN_OR_RETURN(layer.k_proj, LoadDrafterLinear(checkpoint, p + "self_attn.k_proj",
                                                        config.num_kv_heads * d, h, bits));
  ABSL_ASSIGN_OR_RETURN(layer.v_proj, LoadDrafterLinear(checkpoint, p + "self_attn.v_proj",
                                                        config.num_kv_heads * d, h, bits));
  ABSL_ASSIGN_OR_RETURN(layer.o_proj, LoadDrafterLinear(checkpoint, p + "self_attn.o_proj", h,
                                                        config.num_heads * d, bits));
  ABSL_ASSIGN_OR_RETURN(layer.gate_proj,
                        LoadDrafterLinear(checkpoint, p + "mlp.gate_proj", i, h, bits));
  ABSL_ASSIGN_OR_RETURN(layer.up_proj,
                        LoadDrafterLinear(checkpoint, p + "mlp.up_proj", i, h, bits));
  ABSL_ASSIGN_OR_RETURN(layer.down_proj,
                        LoadDrafterLinear(checkpoint, p + "mlp.down_proj", h, i, bits));
  if (config.kind == DrafterKind::kDFlash2) {
    ABSL_ASSIGN_OR_RETURN(layer.attention_conv,
                          LoadConv(checkpoint, p + "attention_conv", config, bits));
    ABSL_ASSIGN_OR_RETURN(layer.mlp_conv, LoadConv(checkpoint, p + "mlp_conv", config, bits));
  }
  return layer;
}

// Published without a `.weight` suffix; z-lab's loader maps it, so accept both.
absl::StatusOr<Codebook> LoadCodebook(const Checkpoint& checkpoint, const std::string& name,
                                      const DrafterConfig& config) {
  const TensorView* view = checkpoint.Find(name);
  if (view == nullptr) view = checkpoint.Find(name + ".weight");
  if (view == nullptr) {
    return absl::NotFoundError(
        absl::StrFormat("%s: no tensor %s (nor %s.weight)", checkpoint.path(), name, name));
  }
  const std::vector<int64_t> want = {config.vocab_size, config.selector_rank};
  if (view->shape != want) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: tensor %s has shape %s, expected %s",
                                                      checkpoint.path(), view->name,
                                                      ShapeString(view->shape), ShapeString(want)));
  }
  Codebook book{.rows = config.vocab_size, .rank = config.selector_rank};
  if (view->dtype == DType::kBF16) {
    book.type = cpu::CodebookType::kBF16;
    book.bytes.resize(view->nbytes);
    std::memcpy(book.bytes.data(), view->data, view->nbytes);
    return book;
  }
  ABSL_ASSIGN_OR_RETURN(const std::vector<float> values, checkpoint.Floats(view->name));
  book.type = cpu::CodebookType::kF32;
  book.bytes.resize(values.size() * sizeof(float));
  std::memcpy(book.bytes.data(), values.data(), book.bytes.size());
  return book;
}

}  // namespace

absl::StatusOr<DrafterWeights> LoadDrafterWeights(const Checkpoint& checkpoint,
                                                  const DrafterConfig& config, LinearBits bits) {
  DrafterWeights w;
  const int64_t h = config.hidden_size;
  // fc stays as stored: the target may fuse the taps itself (engine::TapFuser reads fc from the
  // checkpoint), and both sides must give the same context rows bit for bit.
  ABSL_ASSIGN_OR_RETURN(
      w.fc, LoadDrafterLinear(checkpoint, "fc", h, config.num_taps() * h, LinearBits::kAsStored));
  ABSL_ASSIGN_OR_RETURN(w.hidden_norm, LoadExact(checkpoint, "hidden_norm.weight", {h}));
  ABSL_ASSIGN_OR_RETURN(w.norm, LoadExact(checkpoint, "norm.weight", {h}));
  for (int64_t i = 0; i < config.num_layers; ++i) {
    ABSL_ASSIGN_OR_RETURN(DrafterLayerWeights layer, LoadLayer(checkpoint, i, config, bits));
    w.layers.push_back(std::move(layer));
  }
  if (config.kind == DrafterKind::kDFlash2) {
    SelectorWeights selector;
    ABSL_ASSIGN_OR_RETURN(selector.hidden_projection,
                          LoadDrafterLinear(checkpoint, "candidate_selector.hidden_projection",
                                            config.selector_rank, h, bits));
    ABSL_ASSIGN_OR_RETURN(
        selector.predecessor,
        LoadCodebook(checkpoint, "candidate_selector.predecessor_codebook", config));
    ABSL_ASSIGN_OR_RETURN(
        selector.successor,
        LoadCodebook(checkpoint, "candidate_selector.successor_codebook", config));
    w.selector = std::move(selector);
  }
  return w;
}

}  // namespace twinspan::drafter
