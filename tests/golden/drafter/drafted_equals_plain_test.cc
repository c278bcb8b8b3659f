// drafted == plain: a random tiny drafter of each kind over the golden tiny targets of each family
// (golden/README.md sections 5 and 6), greedy and sampled. Drafts only ever change speed.
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/safetensors/writer.h"
#include "gtest/gtest.h"
#include "services/drafter/drafter.h"
#include "services/drafter/speculative_loop.h"
#include "services/target/target_model.h"
#include "tests/testing/golden.h"

namespace twinspan::drafter {
namespace {

// A drafter checkpoint for a hidden-256, vocab-4096 target with 4 layers, random weights.
std::string WriteRandomDrafter(const std::string& name, bool dflash2, uint32_t seed) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::create_directories(dir);
  const int64_t h = 256, inter = 512, heads = 4, kv = 2, d = 64, vocab = 4096, rank = 16;
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
       {{"block_size", 4}, {"target_layer_ids", {0, 2}}, {"mask_token_id", 4095}}}};
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
  add("fc.weight", {h, 2 * h}, 0.05f, 0.0f);
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

struct Case {
  std::string target;
  bool dflash2;
  float temperature;
};

class DraftedEqualsPlainTest : public ::testing::TestWithParam<Case> {};

TEST_P(DraftedEqualsPlainTest, SameTokens) {
  const Case& c = GetParam();
  const std::string target_dir = twinspan::testing::GoldenPath(c.target);
  auto target = target::OpenTargetModel(target_dir, {.context = 256});
  ASSERT_TRUE(target.ok()) << target.status();
  const std::string drafter_dir = WriteRandomDrafter(
      std::string("twinspan_drafter_") + (c.dflash2 ? "v2" : "v1"), c.dflash2, c.dflash2 ? 7 : 8);
  auto drafter = Drafter::Open(drafter_dir, target_dir,
                               {.model = {.context = 256}, .head = "0:2048,3968:4096"});
  ASSERT_TRUE(drafter.ok()) << drafter.status();
  const std::vector<int32_t> prompt = {11, 402, 95, 3001, 77, 12, 1999, 4000, 5};
  const sampler::SamplingParams sampling{.temperature = c.temperature, .top_k = 40};
  for (const uint64_t seed : {1u, 2u}) {
    auto drafted =
        SpeculativeGenerate(**target, **drafter, prompt, 20, {.sampling = sampling, .seed = seed});
    ASSERT_TRUE(drafted.ok()) << drafted.status();
    auto plain = PlainGenerate(**target, prompt, 20, sampling, seed);
    ASSERT_TRUE(plain.ok()) << plain.status();
    EXPECT_EQ(drafted->output_ids, *plain) << "seed " << seed;
    int64_t total = 0;
    for (int64_t n : drafted->accept_lengths) total += n;
    EXPECT_EQ(total + 1, 20);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, DraftedEqualsPlainTest,
                         ::testing::Values(Case{"hf_qwen3_tiny/model", false, 0.0f},
                                           Case{"hf_qwen3_tiny/model", true, 0.0f},
                                           Case{"hf_qwen3_tiny/model", true, 0.8f},
                                           Case{"hf_qwen3_tiny/model", false, 0.8f},
                                           Case{"hf_qwen3_5_tiny/model", false, 0.0f},
                                           Case{"hf_qwen3_5_tiny/model", true, 0.0f},
                                           Case{"hf_qwen3_5_tiny/model", true, 0.8f},
                                           Case{"hf_qwen3_5_tiny/model", false, 0.8f}));

}  // namespace
}  // namespace twinspan::drafter
