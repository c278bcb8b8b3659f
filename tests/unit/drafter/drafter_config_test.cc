#include "common/config/drafter_config.h"

#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace twinspan::drafter {
namespace {

using nlohmann::json;

// The published z-lab/Qwen3.8-27B-DFlash2 config (qwen3.8-27b-configs.md section 2), trimmed.
json Qwen38DFlash2() {
  return json::parse(R"({
    "architectures": ["DFlash2DraftModel"], "model_type": "qwen3",
    "hidden_size": 5120, "intermediate_size": 17408, "num_hidden_layers": 5,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "rms_norm_eps": 1e-6,
    "rope_parameters": {"rope_theta": 10000000, "rope_type": "default"},
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention",
                    "sliding_attention", "sliding_attention"],
    "sliding_window": 2048, "use_sliding_window": true, "is_causal": false,
    "vocab_size": 248320, "tie_word_embeddings": false, "num_target_layers": 64,
    "dflash_config": {"block_size": 8, "target_layer_ids": [5, 19, 33, 47, 61],
                      "mask_token_id": 248070, "conv_kernel_size": 2, "conv_group_size": 16,
                      "selector_rank": 256, "selector_top_k": 16}})");
}

TEST(DrafterConfigTest, ParsesThePublishedDFlash2Config) {
  auto config = ParseDrafterConfig(Qwen38DFlash2(), "config.json");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->kind, DrafterKind::kDFlash2);
  EXPECT_EQ(config->block_size, 8);
  EXPECT_EQ(config->mask_token_id, 248070);
  EXPECT_EQ(config->num_taps(), 5);
  EXPECT_EQ(config->rope_theta, 1e7);
  EXPECT_EQ(config->conv_groups(), 320);
  ASSERT_EQ(config->layers.size(), 5u);
  EXPECT_FALSE(config->layers[0].causal);  // is_causal false overrides the sliding default.
  EXPECT_EQ(config->layers[0].sliding_window, 2048);
}

TEST(DrafterConfigTest, V1SpellingWithTopLevelBlockSizeAndCausalSlidingDefault) {
  json c = Qwen38DFlash2();
  c["architectures"] = {"DFlashDraftModel"};
  c.erase("is_causal");
  c.erase("rope_parameters");
  c["rope_theta"] = 1e6;
  c["block_size"] = 16;
  c["dflash_config"] = {{"target_layer_ids", {1, 16, 31, 46, 61}}, {"mask_token_id", 248070}};
  c["layer_types"] = {"sliding_attention", "sliding_attention", "sliding_attention",
                      "sliding_attention", "full_attention"};
  auto config = ParseDrafterConfig(c, "config.json");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->kind, DrafterKind::kDFlash);
  EXPECT_EQ(config->block_size, 16);
  EXPECT_EQ(config->rope_theta, 1e6);
  EXPECT_TRUE(config->layers[0].causal);
  EXPECT_FALSE(config->layers[4].causal);
  EXPECT_EQ(config->layers[4].sliding_window, 0);
}

TEST(DrafterConfigTest, ReadsTheCheckpointsNamedHeadVariants) {
  json c = Qwen38DFlash2();
  EXPECT_TRUE(ParseDrafterConfig(c, "config.json")->head_variants.empty());
  c["head_variants"] = {{"two-span", "0:98304,248032:248320"}};
  auto config = ParseDrafterConfig(c, "config.json");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->head_variants.at("two-span"), "0:98304,248032:248320");
  for (const json& bad : {json(7), json({{"two-span", 3}}), json({{"full", "0:10"}})}) {
    c["head_variants"] = bad;
    const auto rejected = ParseDrafterConfig(c, "config.json");
    EXPECT_EQ(rejected.status().code(), absl::StatusCode::kInvalidArgument) << bad.dump();
    EXPECT_NE(rejected.status().message().find("head_variants"), absl::string_view::npos);
  }
}

TEST(DrafterConfigTest, RejectsBadFieldsNamingThem) {
  const std::vector<std::pair<std::string, std::function<void(json&)>>> cases = {
      {"architectures", [](json& c) { c["architectures"] = {"LlamaForCausalLM"}; }},
      {"mask_token_id", [](json& c) { c["dflash_config"]["mask_token_id"] = 248320; }},
      {"target_layer_ids", [](json& c) { c["dflash_config"].erase("target_layer_ids"); }},
      {"conv_group_size", [](json& c) { c["dflash_config"]["conv_group_size"] = 3; }},
      {"selector_top_k", [](json& c) { c["dflash_config"].erase("selector_top_k"); }},
      {"block_size", [](json& c) { c["dflash_config"]["block_size"] = 1; }},
      {"num_key_value_heads", [](json& c) { c["num_key_value_heads"] = 7; }},
      {"layer_types", [](json& c) { c["layer_types"] = {"full_attention"}; }},
      {"hidden_size", [](json& c) { c["hidden_size"] = "wide"; }},
  };
  for (const auto& [field, mutate] : cases) {
    json c = Qwen38DFlash2();
    mutate(c);
    const auto config = ParseDrafterConfig(c, "config.json");
    ASSERT_FALSE(config.ok()) << field;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_NE(config.status().message().find(field), std::string::npos) << config.status();
  }
}

TEST(DrafterConfigTest, MissingFileIsNotFound) {
  EXPECT_EQ(LoadDrafterConfig("/nonexistent-drafter").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace twinspan::drafter
