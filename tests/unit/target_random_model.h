// Random tiny Qwen3 models for the target's property tests (shapes from a TargetConfig, weights
// from a seeded normal distribution).
#ifndef TWINSPAN_TESTS_UNIT_TARGET_RANDOM_MODEL_H_
#define TWINSPAN_TESTS_UNIT_TARGET_RANDOM_MODEL_H_

#include <memory>
#include <random>
#include <vector>

#include "common/config/target_config.h"
#include "services/target/qwen3_model.h"

namespace twinspan::target::testing {

inline TargetConfig TinyQwen3Config() {
  TargetConfig c;
  c.model_type = "qwen3";
  c.family = TargetFamily::kQwen3;
  c.vocab_size = 96;
  c.hidden_size = 40;
  c.intermediate_size = 56;
  c.num_layers = 3;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 12;  // heads * head_dim = 48 != hidden, as Qwen3 allows.
  c.rope_theta = 10000.0;
  c.rotary_dim = 12;
  c.rms_norm_eps = 1e-6f;
  c.layer_types.assign(3, LayerType::kFullAttention);
  return c;
}

class RandomWeights {
 public:
  explicit RandomWeights(uint32_t seed) : rng_(seed) {}

  std::vector<float> Normal(size_t n, float scale, float offset = 0.0f) {
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = offset + dist(rng_);
    return v;
  }

  cpu::LinearWeight Linear(int64_t out, int64_t in) {
    return *cpu::LinearWeight::Dense(out, in, Normal(out * in, 0.3f));
  }

 private:
  std::mt19937 rng_;
};

inline Qwen3Weights RandomQwen3Weights(const TargetConfig& c, uint32_t seed) {
  RandomWeights r(seed);
  Qwen3Weights w;
  const auto table = r.Normal(c.vocab_size * c.hidden_size, 1.0f);
  w.embedding =
      *cpu::EmbeddingTable::FromRaw(cpu::EmbeddingDtype::kF32, c.vocab_size, c.hidden_size,
                                    table.data(), table.size() * sizeof(float));
  const int64_t hd = c.head_dim;
  for (int64_t i = 0; i < c.num_layers; ++i) {
    Qwen3LayerWeights layer;
    layer.input_norm = r.Normal(c.hidden_size, 0.1f, 1.0f);
    layer.post_norm = r.Normal(c.hidden_size, 0.1f, 1.0f);
    layer.attention.q_proj = r.Linear(c.num_heads * hd, c.hidden_size);
    layer.attention.k_proj = r.Linear(c.num_kv_heads * hd, c.hidden_size);
    layer.attention.v_proj = r.Linear(c.num_kv_heads * hd, c.hidden_size);
    layer.attention.o_proj = r.Linear(c.hidden_size, c.num_heads * hd);
    layer.attention.q_norm = r.Normal(hd, 0.1f, 1.0f);
    layer.attention.k_norm = r.Normal(hd, 0.1f, 1.0f);
    layer.mlp.gate_proj = r.Linear(c.intermediate_size, c.hidden_size);
    layer.mlp.up_proj = r.Linear(c.intermediate_size, c.hidden_size);
    layer.mlp.down_proj = r.Linear(c.hidden_size, c.intermediate_size);
    w.layers.push_back(std::move(layer));
  }
  w.final_norm = r.Normal(c.hidden_size, 0.1f, 1.0f);
  w.lm_head = r.Linear(c.vocab_size, c.hidden_size);
  return w;
}

inline std::unique_ptr<Qwen3Model> RandomQwen3Model(
    const TargetOptions& options, uint32_t seed, const TargetConfig& config = TinyQwen3Config()) {
  auto model = Qwen3Model::Create(config, RandomQwen3Weights(config, seed), options);
  return model.ok() ? std::move(*model) : nullptr;
}

}  // namespace twinspan::target::testing

#endif  // TWINSPAN_TESTS_UNIT_TARGET_RANDOM_MODEL_H_
