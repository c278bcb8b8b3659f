#include "tools/synth/dflash2_preset.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "kernels/cpu/q4_linear.h"
#include "nlohmann/json.hpp"

namespace twinspan::synth {
namespace {

using nlohmann::ordered_json;

// Linear weights are U(-a, a) with a = 0.02 * sqrt(3): the reference's initializer_range as a std.
constexpr float kLinearRange = 0.0346f;

struct LinearShape {
  const char* name;
  int64_t out, in;
};

class Tensors {
 public:
  explicit Tensors(int linear_bits) : linear_bits_(linear_bits) {}

  void Plain(std::string name, std::vector<int64_t> shape, float lo, float hi) {
    out_.push_back({std::move(name), DType::kBF16, std::move(shape),
                    Fill{.kind = FillKind::kUniform, .lo = lo, .hi = hi}});
  }
  // A linear [out, in] (HF orientation) under `prefix`, U(-range, range) or its Q4 counterpart:
  // codes uniform over 0..15, scale near range / 7.5 and offset near -7.5 x scale.
  absl::Status Linear(const std::string& prefix, int64_t out, int64_t in,
                      float range = kLinearRange) {
    if (linear_bits_ == 16) {
      Plain(prefix + ".weight", {out, in}, -range, range);
      return absl::OkStatus();
    }
    if (in % cpu::kQ4GroupSize != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: in_features %d is not a multiple of %d for Q4", prefix, in, cpu::kQ4GroupSize));
    }
    const float scale = range / 7.5f;
    const int64_t groups = in / cpu::kQ4GroupSize;
    out_.push_back({prefix + cpu::kQ4CodesSuffix,
                    DType::kU8,
                    {out, in / 2},
                    Fill{.kind = FillKind::kRandomBits}});
    out_.push_back({prefix + cpu::kQ4ScalesSuffix,
                    DType::kF16,
                    {out, groups},
                    Fill{.kind = FillKind::kUniform, .lo = 0.95f * scale, .hi = 1.05f * scale}});
    out_.push_back({prefix + cpu::kQ4OffsetsSuffix,
                    DType::kF16,
                    {out, groups},
                    Fill{.kind = FillKind::kUniform,
                         .lo = -7.5f * 1.05f * scale,
                         .hi = -7.5f * 0.95f * scale}});
    return absl::OkStatus();
  }

  std::vector<TensorSpec> Take() { return std::move(out_); }

 private:
  const int linear_bits_;
  std::vector<TensorSpec> out_;
};

// The published key order (not sorted: is_causal follows bos_token_id), two-space indent.
std::string ConfigJson(const DFlash2Shape& s) {
  ordered_json layer_types = ordered_json::array();
  for (int64_t i = 0; i < s.layers; ++i) layer_types.push_back("sliding_attention");
  ordered_json c;
  c["architectures"] = {"DFlash2DraftModel"};
  c["attention_bias"] = false;
  c["attention_dropout"] = 0.0;
  c["bos_token_id"] = nullptr;
  c["is_causal"] = false;
  c["dflash_config"] = {{"block_size", s.block_size},
                        {"conv_group_size", s.conv_group},
                        {"conv_kernel_size", s.conv_kernel},
                        {"mask_token_id", s.mask_token_id},
                        {"selector_rank", s.selector_rank},
                        {"selector_top_k", s.selector_top_k},
                        {"target_layer_ids", s.target_layer_ids}};
  c["dtype"] = "bfloat16";
  c["eos_token_id"] = s.eos_token_id;
  c["head_dim"] = s.head_dim;
  c["hidden_act"] = "silu";
  c["hidden_size"] = s.hidden;
  c["initializer_range"] = 0.02;
  c["intermediate_size"] = s.intermediate;
  c["layer_types"] = layer_types;
  c["max_position_embeddings"] = 262144;
  c["max_window_layers"] = s.layers;
  c["model_type"] = "qwen3";
  c["num_attention_heads"] = s.heads;
  c["num_hidden_layers"] = s.layers;
  c["num_key_value_heads"] = s.kv_heads;
  c["num_target_layers"] = s.num_target_layers;
  c["pad_token_id"] = s.eos_token_id;
  c["rms_norm_eps"] = 1e-6;
  c["rope_parameters"] = {{"rope_theta", 10000000}, {"rope_type", "default"}};
  c["sliding_window"] = s.sliding_window;
  c["tie_word_embeddings"] = false;
  c["transformers_version"] = "5.15.0";
  c["use_cache"] = true;
  c["use_sliding_window"] = true;
  c["vocab_size"] = s.vocab;
  return c.dump(2) + "\n";
}

}  // namespace

DFlash2Shape Qwen38_27BDFlash2() {
  return {.vocab = 248320,
          .hidden = 5120,
          .intermediate = 17408,
          .layers = 5,
          .heads = 32,
          .kv_heads = 8,
          .head_dim = 128,
          .mask_token_id = 248070,
          .eos_token_id = 248044,
          .target_layer_ids = {5, 19, 33, 47, 61},
          .num_target_layers = 64,
          .selector_rank = 256,
          .selector_top_k = 16};
}

DFlash2Shape Qwen38TinyDFlash2() {
  return {.vocab = 4096,
          .hidden = 256,
          .intermediate = 512,
          .layers = 5,
          .heads = 4,
          .kv_heads = 2,
          .head_dim = 64,
          .mask_token_id = 4096 - (248320 - 248070),
          .eos_token_id = 4096 - (248320 - 248044),
          .target_layer_ids = {1, 3, 4, 6, 7},
          .num_target_layers = 8,
          .selector_rank = 32,
          .selector_top_k = 8};
}

absl::StatusOr<CheckpointSpec> DFlash2Checkpoint(const DFlash2Shape& s, int linear_bits) {
  if (linear_bits != 16 && linear_bits != 4) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--drafter-bits %d: the drafter is written at 16 (bf16) or 4 (Q4) bits", linear_bits));
  }
  const int64_t h = s.hidden, taps = static_cast<int64_t>(s.target_layer_ids.size());
  const int64_t conv_rows = 2 * s.conv_kernel * (h / s.conv_group);  // [side, tap, group]
  Tensors t(linear_bits);
  // fc stays bf16 at 4 bits too: the target may fuse the taps with it (see drafter_weights.h).
  t.Plain("fc.weight", {h, taps * h}, -kLinearRange, kLinearRange);
  t.Plain("hidden_norm.weight", {h}, 0.9f, 1.1f);
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string p = absl::StrFormat("layers.%d.", i);
    t.Plain(p + "input_layernorm.weight", {h}, 0.9f, 1.1f);
    t.Plain(p + "post_attention_layernorm.weight", {h}, 0.9f, 1.1f);
    const LinearShape linears[] = {{"self_attn.q_proj", s.heads * s.head_dim, h},
                                   {"self_attn.k_proj", s.kv_heads * s.head_dim, h},
                                   {"self_attn.v_proj", s.kv_heads * s.head_dim, h},
                                   {"self_attn.o_proj", h, s.heads * s.head_dim},
                                   {"mlp.gate_proj", s.intermediate, h},
                                   {"mlp.up_proj", s.intermediate, h},
                                   {"mlp.down_proj", h, s.intermediate}};
    for (const LinearShape& l : linears) {
      if (absl::Status st = t.Linear(p + l.name, l.out, l.in); !st.ok()) return st;
    }
    t.Plain(p + "self_attn.q_norm.weight", {s.head_dim}, 0.9f, 1.1f);
    t.Plain(p + "self_attn.k_norm.weight", {s.head_dim}, 0.9f, 1.1f);
    for (const char* conv : {"attention_conv", "mlp_conv"}) {
      t.Plain(p + conv + ".base_kernel", {2, s.conv_kernel, h}, 0.2f, 0.8f);
      // Small, so the per-row kernels stay near the base kernel at any width.
      if (absl::Status st = t.Linear(p + conv + ".kernel_projection", conv_rows, h, 0.01f);
          !st.ok()) {
        return st;
      }
    }
  }
  t.Plain("norm.weight", {h}, 0.9f, 1.1f);
  if (absl::Status st = t.Linear("candidate_selector.hidden_projection", s.selector_rank, h);
      !st.ok()) {
    return st;
  }
  t.Plain("candidate_selector.predecessor_codebook", {s.vocab, s.selector_rank}, -0.6f, 0.6f);
  t.Plain("candidate_selector.successor_codebook", {s.vocab, s.selector_rank}, -0.6f, 0.6f);
  CheckpointSpec spec;
  spec.tensors = t.Take();
  spec.config_json = ConfigJson(s);
  spec.summary = absl::StrFormat(
      "DFlash2 drafter: %d layers, hidden %d, vocab %d, block %d, linears %s", s.layers, h, s.vocab,
      s.block_size, linear_bits == 16 ? "bf16" : "Q4 (4-bit affine, groups of 128)");
  return spec;
}

}  // namespace twinspan::synth
