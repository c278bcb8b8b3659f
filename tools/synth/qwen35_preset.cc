#include "tools/synth/qwen35_preset.h"

#include <cmath>
#include <variant>

#include "absl/strings/str_format.h"
#include "common/exl3/bit_allocation.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace twinspan::synth {
namespace {

using nlohmann::json;

constexpr int64_t kReferenceVocab = 248320;
constexpr int64_t kImEnd = 248046, kEndOfText = 248044;
constexpr int64_t kImage = 248056, kVideo = 248057, kVisionStart = 248053, kVisionEnd = 248054;

// A real token id's counterpart in a smaller vocabulary: the same distance from its end.
int64_t TokenId(const Qwen35Shape& s, int64_t real_id) {
  return s.vocab - (kReferenceVocab - real_id);
}

// An EXL3 linear of HF shape [out, in] whose K its group decides.
struct PendingLinear {
  std::string prefix;
  int64_t out = 0, in = 0;
  size_t group = 0;
};

// Tensors in checkpoint order, linears still waiting for their K.
class Layout {
 public:
  void Plain(std::string name, DType dtype, std::vector<int64_t> shape, float lo, float hi) {
    entries_.emplace_back(TensorSpec{std::move(name), dtype, std::move(shape),
                                     Fill{.kind = FillKind::kUniform, .lo = lo, .hi = hi}});
  }
  // Starts a group of linears that share one K.
  void Group(int64_t layer) { groups_.push_back({.layer = layer, .numel = 0}); }
  void Linear(std::string prefix, int64_t out, int64_t in) {
    groups_.back().numel += out * in;
    entries_.emplace_back(PendingLinear{std::move(prefix), out, in, groups_.size() - 1});
  }

  const std::vector<exl3::QuantGroup>& groups() const { return groups_; }

  std::vector<TensorSpec> Expand(const std::vector<int>& k, exl3::Codebook codebook) const {
    std::vector<TensorSpec> out;
    for (const auto& entry : entries_) {
      if (const auto* t = std::get_if<TensorSpec>(&entry)) {
        out.push_back(*t);
        continue;
      }
      const auto& l = std::get<PendingLinear>(entry);
      AppendExl3(out, l.prefix, l.out, l.in, k[l.group], codebook);
    }
    return out;
  }

  // EXL3 stores W as [k = in, n = out]: trellis [k/16, n/16, 16K], suh [k], svh [n].
  static void AppendExl3(std::vector<TensorSpec>& out, const std::string& prefix, int64_t n,
                         int64_t k, int bits, exl3::Codebook codebook) {
    out.push_back({prefix + exl3::kTrellisSuffix,
                   DType::kI16,
                   {k / 16, n / 16, int64_t{16} * bits},
                   Fill{.kind = FillKind::kRandomBits}});
    const Fill scale{.kind = FillKind::kSignScale, .lo = 0.02f, .hi = 0.1f};
    out.push_back({prefix + exl3::kSuhSuffix, DType::kF16, {k}, scale});
    out.push_back({prefix + exl3::kSvhSuffix, DType::kF16, {n}, scale});
    if (codebook == exl3::Codebook::kMul1) {
      out.push_back({prefix + exl3::kMul1Suffix,
                     DType::kI32,
                     {},
                     Fill{.kind = FillKind::kConstant,
                          .value = static_cast<int32_t>(exl3::kMul1Multiplier)}});
    } else if (codebook == exl3::Codebook::kMcg) {
      out.push_back(
          {prefix + exl3::kMcgSuffix,
           DType::kI32,
           {},
           Fill{.kind = FillKind::kConstant, .value = static_cast<int32_t>(exl3::kMcgMultiplier)}});
    }
  }

 private:
  std::vector<std::variant<TensorSpec, PendingLinear>> entries_;
  std::vector<exl3::QuantGroup> groups_;
};

bool IsFullAttention(const Qwen35Shape& s, int64_t layer) {
  return (layer + 1) % s.full_attention_interval == 0;
}

int64_t ConvChannels(const Qwen35Shape& s) {
  return 2 * s.linear_key_heads * s.linear_key_dim + s.linear_value_heads * s.linear_value_dim;
}

// Zero-centred norms (Qwen3.5 applies 1 + w) get small values; the GDN gated norm is plain.
void AddLayer(const Qwen35Shape& s, int64_t i, Layout& layout) {
  const std::string p = absl::StrFormat("model.language_model.layers.%d.", i);
  const int64_t h = s.hidden;
  layout.Plain(p + "input_layernorm.weight", DType::kBF16, {h}, -0.1f, 0.1f);
  layout.Plain(p + "post_attention_layernorm.weight", DType::kBF16, {h}, -0.1f, 0.1f);
  if (IsFullAttention(s, i)) {
    const std::string a = p + "self_attn.";
    layout.Group(i);
    layout.Linear(a + "q_proj", 2 * s.heads * s.head_dim, h);  // Queries and their output gates.
    layout.Linear(a + "k_proj", s.kv_heads * s.head_dim, h);
    layout.Linear(a + "v_proj", s.kv_heads * s.head_dim, h);
    layout.Group(i);
    layout.Linear(a + "o_proj", h, s.heads * s.head_dim);
    layout.Plain(a + "q_norm.weight", DType::kBF16, {s.head_dim}, -0.1f, 0.1f);
    layout.Plain(a + "k_norm.weight", DType::kBF16, {s.head_dim}, -0.1f, 0.1f);
  } else {
    const std::string a = p + "linear_attn.";
    const int64_t value_width = s.linear_value_heads * s.linear_value_dim;
    layout.Group(i);
    layout.Linear(a + "in_proj_qkv", ConvChannels(s), h);
    layout.Linear(a + "in_proj_z", value_width, h);
    layout.Group(i);
    layout.Linear(a + "out_proj", h, value_width);
    layout.Plain(a + "in_proj_a.weight", DType::kF16, {s.linear_value_heads, h}, -0.02f, 0.02f);
    layout.Plain(a + "in_proj_b.weight", DType::kF16, {s.linear_value_heads, h}, -0.02f, 0.02f);
    layout.Plain(a + "conv1d.weight", DType::kBF16, {ConvChannels(s), 1, s.conv_kernel}, -0.5f,
                 0.5f);
    layout.Plain(a + "A_log", DType::kBF16, {s.linear_value_heads}, 0.0f, 1.0f);
    layout.Plain(a + "dt_bias", DType::kBF16, {s.linear_value_heads}, -1.0f, 1.0f);
    layout.Plain(a + "norm.weight", DType::kBF16, {s.linear_value_dim}, 0.9f, 1.1f);
  }
  const std::string m = p + "mlp.";
  layout.Group(i);
  layout.Linear(m + "gate_proj", s.intermediate, h);
  layout.Linear(m + "up_proj", s.intermediate, h);
  layout.Group(i);
  layout.Linear(m + "down_proj", h, s.intermediate);
}

json GenerationConfig(const Qwen35Shape& s) {
  const int64_t eot = TokenId(s, kEndOfText);
  return {{"bos_token_id", eot}, {"do_sample", true},  {"eos_token_id", {TokenId(s, kImEnd), eot}},
          {"pad_token_id", eot}, {"temperature", 1.0}, {"top_k", 20},
          {"top_p", 0.95}};
}

json TextConfig(const Qwen35Shape& s) {
  json layer_types = json::array();
  for (int64_t i = 0; i < s.layers; ++i) {
    layer_types.push_back(IsFullAttention(s, i) ? "full_attention" : "linear_attention");
  }
  const int64_t eot = TokenId(s, kEndOfText);
  return {{"attention_bias", false},
          {"attention_dropout", 0.0},
          {"attn_output_gate", true},
          {"bos_token_id", eot},
          {"dtype", "bfloat16"},
          {"eos_token_id", eot},
          {"full_attention_interval", s.full_attention_interval},
          {"head_dim", s.head_dim},
          {"hidden_act", "silu"},
          {"hidden_size", s.hidden},
          {"initializer_range", 0.02},
          {"intermediate_size", s.intermediate},
          {"layer_types", layer_types},
          {"linear_conv_kernel_dim", s.conv_kernel},
          {"linear_key_head_dim", s.linear_key_dim},
          {"linear_num_key_heads", s.linear_key_heads},
          {"linear_num_value_heads", s.linear_value_heads},
          {"linear_value_head_dim", s.linear_value_dim},
          {"mamba_ssm_dtype", "float32"},
          {"max_position_embeddings", 262144},
          {"model_type", "qwen3_5_text"},
          {"mtp_num_hidden_layers", 1},
          {"mtp_use_dedicated_embeddings", false},
          {"num_attention_heads", s.heads},
          {"num_hidden_layers", s.layers},
          {"num_key_value_heads", s.kv_heads},
          {"output_gate_type", "swish"},
          {"pad_token_id", nullptr},
          {"partial_rotary_factor", 0.25},
          {"rms_norm_eps", 1e-6},
          {"rope_parameters",
           {{"mrope_interleaved", true},
            {"mrope_section", s.mrope_section},
            {"partial_rotary_factor", 0.25},
            {"rope_theta", 10000000},
            {"rope_type", "default"}}},
          {"tie_word_embeddings", false},
          {"use_cache", true},
          {"vocab_size", s.vocab}};
}

json VisionConfig(const Qwen35Shape& s) {
  return {{"deepstack_visual_indexes", json::array()},
          {"depth", 27},
          {"hidden_act", "gelu_pytorch_tanh"},
          {"hidden_size", 1152},
          {"intermediate_size", 4304},
          {"model_type", "qwen3_5_vision"},
          {"num_heads", 16},
          {"num_position_embeddings", 2304},
          {"out_hidden_size", s.hidden},
          {"patch_size", 16},
          {"spatial_merge_size", 2},
          {"temporal_patch_size", 2}};
}

absl::Status CheckShape(const Qwen35Shape& s, const Exl3Options& o) {
  if (!(o.head_bits >= 1 && o.head_bits <= 8) && o.head_bits != 16) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--head-bits %d is not 1..8 or 16", o.head_bits));
  }
  const int64_t dims[] = {s.vocab,
                          s.hidden,
                          s.intermediate,
                          s.heads * s.head_dim,
                          s.kv_heads * s.head_dim,
                          ConvChannels(s),
                          s.linear_value_heads * s.linear_value_dim};
  for (const int64_t d : dims) {
    if (d <= 0 || d % exl3::kHadamardSize != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "qwen3_5 synth: a linear dimension %d is not a positive multiple of 128", d));
    }
  }
  if (s.layers < 1 || s.full_attention_interval < 1) {
    return absl::InvalidArgumentError(absl::StrFormat("qwen3_5 synth: %d layers", s.layers));
  }
  return absl::OkStatus();
}

}  // namespace

Qwen35Shape Qwen38_27B() {
  return {.vocab = 248320,
          .hidden = 5120,
          .intermediate = 17408,
          .layers = 64,
          .heads = 24,
          .kv_heads = 4,
          .head_dim = 256,
          .linear_key_heads = 16,
          .linear_value_heads = 48,
          .linear_key_dim = 128,
          .linear_value_dim = 128,
          .mrope_section = {11, 11, 10}};
}

Qwen35Shape Qwen38Tiny() {
  return {.vocab = 4096,
          .hidden = 256,
          .intermediate = 512,
          .layers = 8,
          .heads = 4,
          .kv_heads = 2,
          .head_dim = 64,
          .linear_key_heads = 2,
          .linear_value_heads = 6,
          .linear_key_dim = 64,
          .linear_value_dim = 64,
          .mrope_section = {3, 3, 2}};
}

absl::StatusOr<CheckpointSpec> Qwen35Checkpoint(const Qwen35Shape& s, const Exl3Options& o) {
  ABSL_RETURN_IF_ERROR(CheckShape(s, o));
  Layout layout;
  layout.Plain("model.language_model.embed_tokens.weight", DType::kBF16, {s.vocab, s.hidden},
               -0.05f, 0.05f);
  for (int64_t i = 0; i < s.layers; ++i) AddLayer(s, i, layout);
  layout.Plain("model.language_model.norm.weight", DType::kBF16, {s.hidden}, -0.1f, 0.1f);
  ABSL_ASSIGN_OR_RETURN(const std::vector<int> k,
                        exl3::AllocateBits(layout.groups(), s.layers, o.bits));
  const double average = exl3::AverageBits(layout.groups(), k);

  CheckpointSpec spec;
  spec.tensors = layout.Expand(k, o.codebook);
  if (o.head_bits == 16) {
    spec.tensors.push_back({"lm_head.weight",
                            DType::kF16,
                            {s.vocab, s.hidden},
                            Fill{.kind = FillKind::kUniform, .lo = -0.05f, .hi = 0.05f}});
  } else {
    Layout::AppendExl3(spec.tensors, "lm_head", s.vocab, s.hidden, o.head_bits, o.codebook);
  }
  const int64_t eot = TokenId(s, kEndOfText);
  json config = {{"architectures", {"Qwen3_5ForConditionalGeneration"}},
                 {"eos_token_id", {TokenId(s, kImEnd), eot}},
                 {"generation_config", GenerationConfig(s)},
                 {"image_token_id", TokenId(s, kImage)},
                 {"language_model_only", false},
                 {"model_type", "qwen3_5"},
                 {"quantization_config",
                  {{"bits", std::round(average * 100.0) / 100.0},
                   {"calibration", {{"cols", 2048}, {"rows", 250}}},
                   {"codebook", std::string(exl3::CodebookName(o.codebook))},
                   {"head_bits", o.head_bits},
                   {"out_scales", "always"},
                   {"quant_method", "exl3"},
                   {"version", "1.4.1"}}},
                 {"text_config", TextConfig(s)},
                 {"tie_word_embeddings", false},
                 {"transformers_version", "5.8.0.dev0"},
                 {"video_token_id", TokenId(s, kVideo)},
                 {"vision_config", VisionConfig(s)},
                 {"vision_end_token_id", TokenId(s, kVisionEnd)},
                 {"vision_start_token_id", TokenId(s, kVisionStart)}};
  spec.config_json = config.dump(2) + "\n";
  json generation = GenerationConfig(s);
  generation["transformers_version"] = "5.8.0.dev0";
  spec.files["generation_config.json"] = generation.dump(2) + "\n";
  spec.summary = absl::StrFormat(
      "qwen3_5 EXL3 (%s): %d layers, hidden %d, vocab %d, body %.2f bits (requested %g), head %d "
      "bits",
      exl3::CodebookName(o.codebook), s.layers, s.hidden, s.vocab, average, o.bits, o.head_bits);
  return spec;
}

}  // namespace twinspan::synth
