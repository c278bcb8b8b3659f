// Target config parsing: Qwen3, the Qwen3.5 wrapper with text_config, bad fields, and the MoE
// refusal when a drafter is configured.
#include "common/config/target_config.h"

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "services/target/target_model.h"

namespace twinspan::target {
namespace {

using nlohmann::json;

json Qwen3Json() {
  return json::parse(R"({
    "model_type": "qwen3", "vocab_size": 4096, "hidden_size": 256, "intermediate_size": 512,
    "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
    "rms_norm_eps": 1e-6, "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
    "tie_word_embeddings": false, "eos_token_id": 7})");
}

// The shape of Qwen3.8-27B's config.json (qwen3.8-27b-configs.md section 1), layer_types omitted.
json Qwen35WrapperJson() {
  return json::parse(R"({
    "model_type": "qwen3_5", "tie_word_embeddings": false, "eos_token_id": [248046, 248044],
    "text_config": {
      "model_type": "qwen3_5_text", "vocab_size": 248320, "hidden_size": 5120,
      "intermediate_size": 17408, "num_hidden_layers": 64, "full_attention_interval": 4,
      "num_attention_heads": 24, "num_key_value_heads": 4, "head_dim": 256,
      "attn_output_gate": true, "linear_num_key_heads": 16, "linear_num_value_heads": 48,
      "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
      "rms_norm_eps": 1e-6, "partial_rotary_factor": 0.25,
      "rope_parameters": {"rope_type": "default", "rope_theta": 10000000,
                          "partial_rotary_factor": 0.25, "mrope_interleaved": true,
                          "mrope_section": [11, 11, 10]}}})");
}

TEST(TargetConfigTest, ParsesQwen3) {
  auto c = ParseTargetConfig(Qwen3Json(), "config.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->family, TargetFamily::kQwen3);
  EXPECT_EQ(c->rotary_dim, 64);
  EXPECT_EQ(c->rope_theta, 1e6);
  EXPECT_EQ(c->layer_types.size(), 4u);
  EXPECT_EQ(c->eos_token_ids, std::vector<int64_t>{7});
  EXPECT_FALSE(c->exl3);
}

TEST(TargetConfigTest, ParsesTheQwen35WrapperFromTextConfig) {
  auto c = ParseTargetConfig(Qwen35WrapperJson(), "config.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->family, TargetFamily::kQwen35);
  EXPECT_EQ(c->hidden_size, 5120);
  EXPECT_EQ(c->rotary_dim, 64);  // 256 * 0.25.
  EXPECT_EQ(c->rope_theta, 1e7);
  EXPECT_TRUE(c->attn_output_gate);
  ASSERT_EQ(c->layer_types.size(), 64u);
  EXPECT_EQ(c->layer_types[2], LayerType::kLinearAttention);
  EXPECT_EQ(c->layer_types[3], LayerType::kFullAttention);  // i mod 4 == 3.
  EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{248046, 248044}));
}

TEST(TargetConfigTest, ReadsExl3QuantizationAndRefusesOtherMethods) {
  json j = Qwen3Json();
  j["quantization_config"] = {{"quant_method", "exl3"}, {"bits", 4.0}};
  auto c = ParseTargetConfig(j, "config.json");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->exl3);
  j["quantization_config"] = {{"quant_method", "gptq"}};
  EXPECT_EQ(ParseTargetConfig(j, "config.json").status().code(), absl::StatusCode::kUnimplemented);
}

TEST(TargetConfigTest, NamesTheBadField) {
  json j = Qwen3Json();
  j["model_type"] = "llama";
  auto c = ParseTargetConfig(j, "m/config.json");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("model_type"), std::string::npos);
  j = Qwen3Json();
  j["num_key_value_heads"] = 3;
  c = ParseTargetConfig(j, "m/config.json");
  EXPECT_NE(c.status().message().find("num_key_value_heads"), std::string::npos);
  j = Qwen3Json();
  j.erase("hidden_size");
  c = ParseTargetConfig(j, "m/config.json");
  EXPECT_NE(c.status().message().find("hidden_size is missing"), std::string::npos);
  j = Qwen3Json();
  j["layer_types"] = {"full_attention"};
  EXPECT_FALSE(ParseTargetConfig(j, "m/config.json").ok());
  j = Qwen3Json();
  j["attention_bias"] = true;
  EXPECT_EQ(ParseTargetConfig(j, "m/config.json").status().code(),
            absl::StatusCode::kUnimplemented);
  j = Qwen3Json();
  j["use_sliding_window"] = true;
  EXPECT_EQ(ParseTargetConfig(j, "m/config.json").status().code(),
            absl::StatusCode::kUnimplemented);
  j = Qwen3Json();
  j["layer_types"] = {"full_attention", "full_attention", "sliding_attention", "full_attention"};
  EXPECT_EQ(ParseTargetConfig(j, "m/config.json").status().code(),
            absl::StatusCode::kUnimplemented);
  j = Qwen3Json();
  j["partial_rotary_factor"] = 0.3;  // 64 * 0.3 is not an even integer.
  EXPECT_FALSE(ParseTargetConfig(j, "m/config.json").ok());
}

TEST(OpenTargetModelTest, RefusesAMixtureOfExpertsTargetWhenADrafterIsConfigured) {
  const auto dir = std::filesystem::temp_directory_path() / "twinspan_target_moe_config";
  std::filesystem::create_directories(dir);
  json j = Qwen3Json();
  j["num_experts"] = 8;
  std::ofstream(dir / "config.json") << j.dump();
  TargetOptions options;
  options.drafter_configured = true;
  auto model = OpenTargetModel(dir.string(), options);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(model.status().message().find("mixture-of-experts"), std::string::npos);
  options.context = 0;
  EXPECT_EQ(OpenTargetModel(dir.string(), options).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::filesystem::remove_all(dir);
}

TEST(OpenTargetModelTest, MissingFolderIsNotFound) {
  EXPECT_EQ(OpenTargetModel("/nonexistent/model", TargetOptions{}).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace twinspan::target
