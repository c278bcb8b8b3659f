#include "tools/quantize/model_plan.h"

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/exl3/format.h"
#include "common/status.h"
#include "services/weights/weight_loader.h"

namespace twinspan::quantize {
namespace {

// Linears of one layer that read one input share a group (and so one K), as exllamav3's qmaps do.
struct LayerLinear {
  std::string name;  // Under the layer prefix.
  int64_t out = 0, in = 0;
  bool new_group = false;  // Starts a group.
};

std::vector<LayerLinear> LayerLinears(const target::TargetConfig& c, int64_t layer) {
  const int64_t hd = c.head_dim, hidden = c.hidden_size;
  std::vector<LayerLinear> l;
  if (c.layer_types[layer] == target::LayerType::kFullAttention) {
    const int64_t q_rows = (c.attn_output_gate ? 2 : 1) * c.num_heads * hd;
    l.push_back({"self_attn.q_proj", q_rows, hidden, true});
    l.push_back({"self_attn.k_proj", c.num_kv_heads * hd, hidden, false});
    l.push_back({"self_attn.v_proj", c.num_kv_heads * hd, hidden, false});
    l.push_back({"self_attn.o_proj", hidden, c.num_heads * hd, true});
  } else {
    const int64_t qkv = 2 * c.linear_num_key_heads * c.linear_key_head_dim +
                        c.linear_num_value_heads * c.linear_value_head_dim;
    const int64_t value = c.linear_num_value_heads * c.linear_value_head_dim;
    l.push_back({"linear_attn.in_proj_qkv", qkv, hidden, true});
    l.push_back({"linear_attn.in_proj_z", value, hidden, false});
    l.push_back({"linear_attn.out_proj", hidden, value, true});
  }
  l.push_back({"mlp.gate_proj", c.intermediate_size, hidden, true});
  l.push_back({"mlp.up_proj", c.intermediate_size, hidden, false});
  l.push_back({"mlp.down_proj", hidden, c.intermediate_size, true});
  return l;
}

absl::Status CheckWeight(const Checkpoint& ckpt, const std::string& name, int64_t out, int64_t in) {
  const TensorView* view = ckpt.Find(name);
  if (view == nullptr) {
    return absl::NotFoundError(absl::StrFormat("%s: no tensor %s", ckpt.path(), name));
  }
  if (view->dtype != DType::kF32 && view->dtype != DType::kF16 && view->dtype != DType::kBF16) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s is %s; twinspan-quantize reads F32, F16 or BF16 weights",
                        ckpt.path(), name, DTypeName(view->dtype)));
  }
  if (view->shape != std::vector<int64_t>{out, in}) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s is [%s], expected [%d, %d]",
                                                      ckpt.path(), name,
                                                      absl::StrJoin(view->shape, ", "), out, in));
  }
  if (in % exl3::kHadamardSize != 0 || out % exl3::kHadamardSize != 0) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: %s is [%d, %d]; EXL3 linears need both sizes to be multiples of 128 (padding is not "
        "supported)",
        ckpt.path(), name, out, in));
  }
  return absl::OkStatus();
}

}  // namespace

const PlannedLinear* ModelPlan::Find(const std::string& prefix) const {
  for (const PlannedLinear& l : linears) {
    if (l.prefix == prefix) return &l;
  }
  return nullptr;
}

absl::StatusOr<ModelPlan> PlanModel(const target::TargetConfig& config,
                                    const Checkpoint& checkpoint, double bits, int head_bits) {
  if (config.exl3) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: the checkpoint is already EXL3-quantized (quantization_config); give an unquantized "
        "one",
        checkpoint.path()));
  }
  if (config.is_moe()) {
    return absl::UnimplementedError(
        absl::StrFormat("%s: mixture-of-experts models (%d experts) are not supported",
                        checkpoint.path(), config.num_experts));
  }
  ModelPlan plan;
  plan.config = config;
  plan.head_bits = head_bits;
  plan.text_prefix = target::TextModelPrefix(checkpoint);
  std::vector<exl3::QuantGroup> groups;
  std::vector<size_t> group_of;
  for (int64_t layer = 0; layer < config.num_layers; ++layer) {
    const std::string p = absl::StrFormat("%slayers.%d.", plan.text_prefix, layer);
    for (const LayerLinear& l : LayerLinears(config, layer)) {
      PlannedLinear planned{p + l.name, p + l.name + ".weight", l.in, l.out, layer};
      ABSL_RETURN_IF_ERROR(CheckWeight(checkpoint, planned.source, l.out, l.in));
      planned.has_bias = checkpoint.Has(planned.prefix + ".bias");
      if (l.new_group) groups.push_back({.layer = layer, .numel = 0});
      groups.back().numel += planned.numel();
      group_of.push_back(groups.size() - 1);
      plan.linears.push_back(std::move(planned));
    }
    if (config.layer_types[layer] == target::LayerType::kLinearAttention) {
      plan.to_f16.insert(p + "linear_attn.in_proj_a.weight");
      plan.to_f16.insert(p + "linear_attn.in_proj_b.weight");
    }
  }
  ABSL_ASSIGN_OR_RETURN(const std::vector<int> k,
                        exl3::AllocateBits(groups, config.num_layers, bits));
  for (size_t i = 0; i < plan.linears.size(); ++i) plan.linears[i].bits = k[group_of[i]];
  plan.average_bits = exl3::AverageBits(groups, k);
  plan.tied_head = !checkpoint.Has("lm_head.weight");
  if (plan.tied_head && !config.tie_word_embeddings) {
    return absl::NotFoundError(absl::StrFormat(
        "%s: no tensor lm_head.weight, and tie_word_embeddings is false", checkpoint.path()));
  }
  if (head_bits != 16) {
    PlannedLinear head{"lm_head",
                       plan.tied_head ? plan.text_prefix + "embed_tokens.weight" : "lm_head.weight",
                       config.hidden_size, config.vocab_size};
    ABSL_RETURN_IF_ERROR(CheckWeight(checkpoint, head.source, head.out, head.in));
    head.bits = head_bits;
    head.has_bias = checkpoint.Has("lm_head.bias");
    plan.linears.push_back(std::move(head));
  }
  return plan;
}

}  // namespace twinspan::quantize
