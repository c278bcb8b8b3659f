#include "tests/unit/quantize/tiny_hf_checkpoint.h"

#include <filesystem>
#include <fstream>
#include <random>

#include "absl/strings/str_format.h"
#include "common/safetensors/half.h"
#include "gtest/gtest.h"

namespace twinspan::quantize::testing {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kHidden = 128, kIntermediate = 256, kVocab = 256, kHeadDim = 64;

class Filler {
 public:
  explicit Filler(uint32_t seed) : rng_(seed) {}
  // bf16 [shape] of offset + scale * N(0, 1).
  void Add(std::vector<OwnedTensor>& out, const std::string& name, std::vector<int64_t> shape,
           float scale, float offset = 0.0f) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::normal_distribution<float> normal;
    std::vector<uint16_t> v(static_cast<size_t>(n));
    for (uint16_t& x : v) x = FloatToBFloat16(offset + scale * normal(rng_));
    out.push_back(OwnedTensor::FromRaw(name, DType::kBF16, std::move(shape), v));
  }

 private:
  std::mt19937 rng_;
};

void AddMlp(Filler& f, std::vector<OwnedTensor>& t, const std::string& p,
            int64_t intermediate = kIntermediate) {
  f.Add(t, p + "mlp.gate_proj.weight", {intermediate, kHidden}, 0.05f);
  f.Add(t, p + "mlp.up_proj.weight", {intermediate, kHidden}, 0.05f);
  f.Add(t, p + "mlp.down_proj.weight", {kHidden, intermediate}, 0.05f);
}

}  // namespace

TinyModel TinyQwen3(int layers, bool tied, int64_t intermediate) {
  TinyModel m;
  m.config = {{"architectures", {"Qwen3ForCausalLM"}},
              {"model_type", "qwen3"},
              {"vocab_size", kVocab},
              {"hidden_size", kHidden},
              {"intermediate_size", intermediate},
              {"num_hidden_layers", layers},
              {"num_attention_heads", 2},
              {"num_key_value_heads", 2},
              {"head_dim", kHeadDim},
              {"rms_norm_eps", 1e-6},
              {"rope_theta", 1e6},
              {"max_position_embeddings", 512},
              {"tie_word_embeddings", tied}};
  Filler f(7);
  f.Add(m.tensors, "model.embed_tokens.weight", {kVocab, kHidden}, 0.5f);
  for (int l = 0; l < layers; ++l) {
    const std::string p = absl::StrFormat("model.layers.%d.", l);
    f.Add(m.tensors, p + "input_layernorm.weight", {kHidden}, 0.1f, 1.0f);
    f.Add(m.tensors, p + "post_attention_layernorm.weight", {kHidden}, 0.1f, 1.0f);
    f.Add(m.tensors, p + "self_attn.q_proj.weight", {2 * kHeadDim, kHidden}, 0.05f);
    f.Add(m.tensors, p + "self_attn.k_proj.weight", {2 * kHeadDim, kHidden}, 0.05f);
    f.Add(m.tensors, p + "self_attn.v_proj.weight", {2 * kHeadDim, kHidden}, 0.05f);
    f.Add(m.tensors, p + "self_attn.o_proj.weight", {kHidden, 2 * kHeadDim}, 0.05f);
    f.Add(m.tensors, p + "self_attn.q_norm.weight", {kHeadDim}, 0.1f, 1.0f);
    f.Add(m.tensors, p + "self_attn.k_norm.weight", {kHeadDim}, 0.1f, 1.0f);
    AddMlp(f, m.tensors, p, intermediate);
  }
  f.Add(m.tensors, "model.norm.weight", {kHidden}, 0.1f, 1.0f);
  if (!tied) f.Add(m.tensors, "lm_head.weight", {kVocab, kHidden}, 0.05f);
  return m;
}

TinyModel TinyQwen35() {
  TinyModel m;
  m.config = {{"architectures", {"Qwen3_5ForCausalLM"}},
              {"model_type", "qwen3_5_text"},
              {"vocab_size", kVocab},
              {"hidden_size", kHidden},
              {"intermediate_size", kIntermediate},
              {"num_hidden_layers", 2},
              {"layer_types", {"linear_attention", "full_attention"}},
              {"num_attention_heads", 2},
              {"num_key_value_heads", 2},
              {"head_dim", kHeadDim},
              {"rms_norm_eps", 1e-6},
              {"rope_parameters",
               {{"rope_type", "default"},
                {"rope_theta", 1e7},
                {"partial_rotary_factor", 0.25},
                {"mrope_interleaved", true},
                {"mrope_section", {2, 3, 3}}}},
              {"linear_num_key_heads", 1},
              {"linear_num_value_heads", 2},
              {"linear_key_head_dim", 64},
              {"linear_value_head_dim", 64},
              {"linear_conv_kernel_dim", 4},
              {"max_position_embeddings", 512},
              {"tie_word_embeddings", true}};
  Filler f(8);
  const std::string root = "model.language_model.";
  f.Add(m.tensors, root + "embed_tokens.weight", {kVocab, kHidden}, 0.5f);
  const std::string g = root + "layers.0.";
  f.Add(m.tensors, g + "input_layernorm.weight", {kHidden}, 0.1f);
  f.Add(m.tensors, g + "post_attention_layernorm.weight", {kHidden}, 0.1f);
  f.Add(m.tensors, g + "linear_attn.in_proj_qkv.weight", {256, kHidden}, 0.05f);
  f.Add(m.tensors, g + "linear_attn.in_proj_z.weight", {128, kHidden}, 0.05f);
  f.Add(m.tensors, g + "linear_attn.in_proj_a.weight", {2, kHidden}, 0.05f);
  f.Add(m.tensors, g + "linear_attn.in_proj_b.weight", {2, kHidden}, 0.05f);
  f.Add(m.tensors, g + "linear_attn.conv1d.weight", {256, 1, 4}, 0.3f);
  f.Add(m.tensors, g + "linear_attn.A_log", {2}, 0.1f);
  f.Add(m.tensors, g + "linear_attn.dt_bias", {2}, 0.1f);
  f.Add(m.tensors, g + "linear_attn.norm.weight", {64}, 0.1f, 1.0f);
  f.Add(m.tensors, g + "linear_attn.out_proj.weight", {kHidden, 128}, 0.05f);
  AddMlp(f, m.tensors, g);
  const std::string a = root + "layers.1.";
  f.Add(m.tensors, a + "input_layernorm.weight", {kHidden}, 0.1f);
  f.Add(m.tensors, a + "post_attention_layernorm.weight", {kHidden}, 0.1f);
  f.Add(m.tensors, a + "self_attn.q_proj.weight", {4 * kHeadDim, kHidden}, 0.05f);
  f.Add(m.tensors, a + "self_attn.k_proj.weight", {2 * kHeadDim, kHidden}, 0.05f);
  f.Add(m.tensors, a + "self_attn.v_proj.weight", {2 * kHeadDim, kHidden}, 0.05f);
  f.Add(m.tensors, a + "self_attn.o_proj.weight", {kHidden, 2 * kHeadDim}, 0.05f);
  f.Add(m.tensors, a + "self_attn.q_norm.weight", {kHeadDim}, 0.1f);
  f.Add(m.tensors, a + "self_attn.k_norm.weight", {kHeadDim}, 0.1f);
  AddMlp(f, m.tensors, a);
  f.Add(m.tensors, root + "norm.weight", {kHidden}, 0.1f);
  return m;
}

std::string WriteTinyModel(const std::string& name, const TinyModel& model,
                           const std::vector<std::string>& extra_files) {
  const fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << model.config.dump(2);
  EXPECT_TRUE(WriteSafetensors((dir / "model.safetensors").string(), model.tensors).ok());
  for (const std::string& f : extra_files) std::ofstream(dir / f) << "{}";
  return dir.string();
}

}  // namespace twinspan::quantize::testing
