// A random tiny Qwen3.5 model (GDN, GDN, gated attention, GDN) for the target's property tests:
// shapes from a qwen3_5_text config.json, weights from a seeded normal distribution.
#ifndef TWINSPAN_TESTS_UNIT_TARGET_RANDOM_QWEN35_H_
#define TWINSPAN_TESTS_UNIT_TARGET_RANDOM_QWEN35_H_

#include <cmath>
#include <random>
#include <vector>

#include "common/config/target_config.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "services/target/qwen3_5_model.h"

namespace twinspan::target::testing {

inline constexpr int64_t kTinyQwen35Vocab = 97;
inline constexpr int64_t kTinyQwen35Hidden = 64;
inline constexpr int64_t kTinyQwen35Intermediate = 96;

inline TargetConfig TinyQwen35Config() {
  const nlohmann::json j = {
      {"model_type", "qwen3_5_text"},
      {"vocab_size", kTinyQwen35Vocab},
      {"hidden_size", kTinyQwen35Hidden},
      {"intermediate_size", kTinyQwen35Intermediate},
      {"num_hidden_layers", 4},
      {"layer_types",
       {"linear_attention", "linear_attention", "full_attention", "linear_attention"}},
      {"num_attention_heads", 4},
      {"num_key_value_heads", 2},
      {"head_dim", 16},
      {"rms_norm_eps", 1e-6},
      {"rope_parameters",
       {{"rope_type", "default"},
        {"rope_theta", 1e7},
        {"partial_rotary_factor", 0.25},
        {"mrope_interleaved", true},
        {"mrope_section", {1, 1, 0}}}},
      {"linear_num_key_heads", 2},
      {"linear_num_value_heads", 4},
      {"linear_key_head_dim", 16},
      {"linear_value_head_dim", 8},
      {"linear_conv_kernel_dim", 4},
      {"tie_word_embeddings", false}};
  auto config = ParseTargetConfig(j, "tiny qwen3_5 test config");
  EXPECT_TRUE(config.ok()) << config.status();
  return *config;
}

class Random35 {
 public:
  explicit Random35(unsigned seed) : gen_(seed) {}
  std::vector<float> Normal(int64_t n, float scale, float offset = 0.0f) {
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = offset + scale * dist(gen_);
    return v;
  }
  cpu::LinearWeight Linear(int64_t out, int64_t in) {
    auto w = cpu::LinearWeight::Dense(out, in, Normal(out * in, 0.3f / std::sqrt(float(in))));
    EXPECT_TRUE(w.ok());
    return *w;
  }
  std::vector<float> Uniform(int64_t n, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(gen_);
    return v;
  }

 private:
  std::mt19937 gen_;
};

inline Qwen35Weights RandomQwen35Weights(const TargetConfig& c, unsigned seed) {
  Random35 rng(seed);
  Qwen35Weights w;
  const std::vector<float> table = rng.Normal(kTinyQwen35Vocab * kTinyQwen35Hidden, 1.0f);
  auto embedding =
      cpu::EmbeddingTable::FromRaw(cpu::EmbeddingDtype::kF32, kTinyQwen35Vocab, kTinyQwen35Hidden,
                                   table.data(), table.size() * sizeof(float));
  EXPECT_TRUE(embedding.ok());
  w.embedding = *embedding;
  const int64_t hd = c.head_dim;
  for (int64_t i = 0; i < c.num_layers; ++i) {
    Qwen35LayerWeights l;
    l.input_norm = rng.Normal(kTinyQwen35Hidden, 0.1f, 1.0f);
    l.post_norm = rng.Normal(kTinyQwen35Hidden, 0.1f, 1.0f);
    if (c.layer_types[i] == LayerType::kFullAttention) {
      l.attention.q_proj = rng.Linear(2 * c.num_heads * hd, kTinyQwen35Hidden);
      l.attention.k_proj = rng.Linear(c.num_kv_heads * hd, kTinyQwen35Hidden);
      l.attention.v_proj = rng.Linear(c.num_kv_heads * hd, kTinyQwen35Hidden);
      l.attention.o_proj = rng.Linear(kTinyQwen35Hidden, c.num_heads * hd);
      l.attention.q_norm = rng.Normal(hd, 0.1f, 1.0f);
      l.attention.k_norm = rng.Normal(hd, 0.1f, 1.0f);
    } else {
      const int64_t kw = c.linear_num_key_heads * c.linear_key_head_dim;
      const int64_t vw = c.linear_num_value_heads * c.linear_value_head_dim;
      l.gdn.in_proj_qkv = rng.Linear(2 * kw + vw, kTinyQwen35Hidden);
      l.gdn.in_proj_z = rng.Linear(vw, kTinyQwen35Hidden);
      l.gdn.in_proj_a = rng.Linear(c.linear_num_value_heads, kTinyQwen35Hidden);
      l.gdn.in_proj_b = rng.Linear(c.linear_num_value_heads, kTinyQwen35Hidden);
      l.gdn.conv = rng.Normal((2 * kw + vw) * c.linear_conv_kernel_dim, 0.5f);
      l.gdn.a_log = rng.Uniform(c.linear_num_value_heads, 0.0f, 2.7f);
      l.gdn.dt_bias = rng.Normal(c.linear_num_value_heads, 0.5f, 1.0f);
      l.gdn.norm = rng.Normal(c.linear_value_head_dim, 0.1f, 1.0f);
      l.gdn.out_proj = rng.Linear(kTinyQwen35Hidden, vw);
    }
    l.mlp.gate_proj = rng.Linear(kTinyQwen35Intermediate, kTinyQwen35Hidden);
    l.mlp.up_proj = rng.Linear(kTinyQwen35Intermediate, kTinyQwen35Hidden);
    l.mlp.down_proj = rng.Linear(kTinyQwen35Hidden, kTinyQwen35Intermediate);
    w.layers.push_back(std::move(l));
  }
  w.final_norm = rng.Normal(kTinyQwen35Hidden, 0.1f, 1.0f);
  w.lm_head = rng.Linear(kTinyQwen35Vocab, kTinyQwen35Hidden);
  return w;
}

}  // namespace twinspan::target::testing

#endif  // TWINSPAN_TESTS_UNIT_TARGET_RANDOM_QWEN35_H_
