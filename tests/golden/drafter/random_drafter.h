// A random DFlash / DFlash2 drafter checkpoint for tests over the golden tiny targets.
#ifndef TWINSPAN_TESTS_GOLDEN_DRAFTER_RANDOM_DRAFTER_H_
#define TWINSPAN_TESTS_GOLDEN_DRAFTER_RANDOM_DRAFTER_H_

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/safetensors/writer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace twinspan::testing {

// Writes a random 2-layer drafter checkpoint (config.json + model.safetensors) for a target of
// width `h`, vocabulary `vocab` and at least 3 layers, and returns its folder.
inline std::string WriteRandomDrafter(const std::string& name, bool dflash2, uint32_t seed,
                                      int64_t h = 256, int64_t vocab = 4096,
                                      std::vector<int64_t> taps = {0, 2}) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::create_directories(dir);
  const int64_t inter = 2 * h, heads = 4, kv = 2, d = h / 4, rank = 16;
  nlohmann::json config = {
      {"architectures", {dflash2 ? "DFlash2DraftModel" : "DFlashDraftModel"}},
      {"model_type", "qwen3"},
      {"hidden_size", h},
      {"intermediate_size", inter},
      {"num_hidden_layers", 2},
      {"num_attention_heads", heads},
      {"num_key_value_heads", kv},
      {"head_dim", d},
      {"rms_norm_eps", 1e-6},
      {"rope_theta", 1e6},
      {"vocab_size", vocab},
      {"layer_types", {"sliding_attention", "full_attention"}},
      {"sliding_window", 6},
      {"dflash_config",
       {{"block_size", 4}, {"target_layer_ids", taps}, {"mask_token_id", vocab - 1}}}};
  if (dflash2) {
    config["dflash_config"]["conv_kernel_size"] = 2;
    config["dflash_config"]["conv_group_size"] = 16;
    config["dflash_config"]["selector_rank"] = rank;
    config["dflash_config"]["selector_top_k"] = 4;
  }
  std::ofstream(dir / "config.json") << config.dump(2);
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<OwnedTensor> tensors;
  const auto add = [&](const std::string& tensor, std::vector<int64_t> shape, float scale,
                       float offset) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<float> values(n);
    for (float& v : values) v = offset + scale * normal(gen);
    tensors.push_back(OwnedTensor::FromFloats(tensor, std::move(shape), values));
  };
  add("fc.weight", {h, static_cast<int64_t>(taps.size()) * h}, 0.05f, 0.0f);
  add("hidden_norm.weight", {h}, 0.1f, 1.0f);
  add("norm.weight", {h}, 0.1f, 1.0f);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {h}, 0.1f, 1.0f);
    add(p + "post_attention_layernorm.weight", {h}, 0.1f, 1.0f);
    add(p + "self_attn.q_norm.weight", {d}, 0.1f, 1.0f);
    add(p + "self_attn.k_norm.weight", {d}, 0.1f, 1.0f);
    add(p + "self_attn.q_proj.weight", {heads * d, h}, 0.05f, 0.0f);
    add(p + "self_attn.k_proj.weight", {kv * d, h}, 0.05f, 0.0f);
    add(p + "self_attn.v_proj.weight", {kv * d, h}, 0.05f, 0.0f);
    add(p + "self_attn.o_proj.weight", {h, heads * d}, 0.05f, 0.0f);
    add(p + "mlp.gate_proj.weight", {inter, h}, 0.05f, 0.0f);
    add(p + "mlp.up_proj.weight", {inter, h}, 0.05f, 0.0f);
    add(p + "mlp.down_proj.weight", {h, inter}, 0.05f, 0.0f);
    if (dflash2) {
      for (const char* conv : {"attention_conv", "mlp_conv"}) {
        add(p + conv + ".base_kernel", {2, 2, h}, 0.3f, 0.5f);
        add(p + conv + ".kernel_projection.weight", {2 * 2 * (h / 16), h}, 0.02f, 0.0f);
      }
    }
  }
  if (dflash2) {
    add("candidate_selector.hidden_projection.weight", {rank, h}, 0.06f, 0.0f);
    add("candidate_selector.predecessor_codebook", {vocab, rank}, 0.35f, 0.0f);
    add("candidate_selector.successor_codebook", {vocab, rank}, 0.35f, 0.0f);
  }
  EXPECT_TRUE(WriteSafetensors((dir / "model.safetensors").string(), tensors).ok());
  return dir.string();
}

}  // namespace twinspan::testing

#endif  // TWINSPAN_TESTS_GOLDEN_DRAFTER_RANDOM_DRAFTER_H_
