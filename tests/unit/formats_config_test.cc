// config.json parsing: the golden checkpoints' configs, the Qwen3.5 wrapper, DFlash spellings and
// errors that name the file and key.
#include <filesystem>
#include <fstream>
#include <string>

#include "common/config/hf_config.h"
#include "common/config/json_file.h"
#include "gtest/gtest.h"
#include "tests/testing/golden.h"

namespace twinspan {
namespace {

namespace fs = std::filesystem;

std::string WriteConfig(const std::string& name, const std::string& text) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("formats_cfg_" + name);
  fs::create_directories(dir);
  std::ofstream(dir / "config.json", std::ios::binary | std::ios::trunc) << text;
  return dir.string();
}

void ExpectErrorNaming(const absl::Status& status, const std::string& a, const std::string& b) {
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find(a), std::string::npos) << status;
  EXPECT_NE(status.message().find(b), std::string::npos) << status;
}

TEST(HfConfigTest, ReadsTheExl3Qwen3Checkpoint) {
  absl::StatusOr<HfConfig> config = LoadHfConfig(testing::GoldenPath("exl3_qwen3_tiny"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model_type, "qwen3");
  EXPECT_EQ(config->text_model_type, "qwen3");
  EXPECT_EQ(config->architectures, (std::vector<std::string>{"Qwen3ForCausalLM"}));
  ASSERT_TRUE(config->quantization.has_value());
  EXPECT_EQ(config->quantization->quant_method, "exl3");
  EXPECT_EQ(config->quantization->version, "1.4.1");
  EXPECT_EQ(config->quantization->bits, 4.0);
  EXPECT_EQ(config->quantization->head_bits, 6);
  EXPECT_EQ(config->quantization->codebook, "mul1");
  EXPECT_FALSE(config->dflash.has_value());
  EXPECT_EQ(*GetInt(config->text, "vocab_size", config->text_where()), 151936);
  EXPECT_EQ(*GetDouble(config->text, "rms_norm_eps", config->text_where()), 1e-6);
}

TEST(HfConfigTest, ReadsTheDFlash2Drafter) {
  absl::StatusOr<HfConfig> config =
      LoadHfConfig(testing::GoldenPath("dflash2_drafter_tiny/model/config.json"));
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(config->dflash.has_value());
  const DFlashConfig& d = *config->dflash;
  EXPECT_EQ(d.target_layer_ids, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(d.mask_token_id, 4095);
  EXPECT_EQ(d.block_size, 8);
  EXPECT_EQ(d.conv_group_size, 16);
  EXPECT_EQ(d.conv_kernel_size, 2);
  EXPECT_EQ(d.selector_rank, 32);
  EXPECT_EQ(d.selector_top_k, 8);
  EXPECT_TRUE(d.is_dflash2());
  EXPECT_EQ(*GetBool(config->raw, "is_causal", config->path), false);
}

TEST(HfConfigTest, ReadsTheDFlashV1DrafterWithTopLevelBlockSize) {
  absl::StatusOr<HfConfig> config = LoadHfConfig(testing::GoldenPath("dflash_drafter_tiny/model"));
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(config->dflash.has_value());
  EXPECT_EQ(config->dflash->target_layer_ids, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(config->dflash->mask_token_id, 4095);
  EXPECT_EQ(config->dflash->block_size, 8);
  EXPECT_FALSE(config->dflash->is_dflash2());
  EXPECT_FALSE(config->dflash->selector_rank.has_value());
}

TEST(HfConfigTest, UnwrapsTheQwen35TextConfig) {
  const std::string dir = WriteConfig("wrapper", R"({
    "architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
    "text_config": {"model_type": "qwen3_5_text", "vocab_size": 248320, "hidden_size": 5120,
                    "rope_parameters": {"rope_theta": 10000000}},
    "quantization_config": {"quant_method": "exl3", "bits": 3.0, "head_bits": 6}})");
  absl::StatusOr<HfConfig> config = LoadHfConfig(dir);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model_type, "qwen3_5");
  EXPECT_EQ(config->text_model_type, "qwen3_5_text");
  EXPECT_EQ(*GetInt(config->text, "hidden_size", config->text_where()), 5120);
  EXPECT_EQ(config->quantization->head_bits, 6);
  EXPECT_FALSE(config->quantization->codebook.has_value());
  absl::StatusOr<int64_t> missing = GetInt(config->text, "num_hidden_layers", config->text_where());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  ExpectErrorNaming(missing.status(), "text_config", "num_hidden_layers");
}

TEST(HfConfigTest, ReadsTheGoldenQwen35Exl3Config) {
  absl::StatusOr<HfConfig> config = LoadHfConfig(testing::GoldenPath("exl3_qwen3_5_tiny"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model_type, "qwen3_5_text");
  EXPECT_EQ(config->quantization->codebook, "mul1");
}

TEST(JsonGettersTest, WrongTypesNameTheFileAndKey) {
  const nlohmann::json j = nlohmann::json::parse(
      R"({"a": "x", "b": 1.5, "c": [1, "2"], "d": 3, "e": 2.0, "n": null, "big": 18446744073709551615})");
  ExpectErrorNaming(GetInt(j, "a", "f.json").status(), "f.json", "\"a\"");
  ExpectErrorNaming(GetInt(j, "b", "f.json").status(), "f.json", "\"b\"");
  ExpectErrorNaming(GetIntList(j, "c", "f.json").status(), "f.json", "\"c\"");
  ExpectErrorNaming(GetString(j, "d", "f.json").status(), "f.json", "\"d\"");
  ExpectErrorNaming(GetBool(j, "d", "f.json").status(), "f.json", "\"d\"");
  ExpectErrorNaming(GetInt(j, "big", "f.json").status(), "f.json", "\"big\"");
  EXPECT_EQ(*GetInt(j, "e", "f.json"), 2);
  EXPECT_EQ(*GetDouble(j, "d", "f.json"), 3.0);
  EXPECT_FALSE(GetOptionalInt(j, "n", "f.json")->has_value());
  EXPECT_FALSE(GetOptionalInt(j, "zz", "f.json")->has_value());
  EXPECT_EQ(GetString(j, "n", "f.json").status().code(), absl::StatusCode::kNotFound);
}

TEST(HfConfigTest, BadFilesNameTheFileAndProblem) {
  ExpectErrorNaming(LoadHfConfig(WriteConfig("notjson", "{\"model_type\": ")).status(),
                    "config.json", "not valid JSON");
  ExpectErrorNaming(LoadHfConfig(WriteConfig("notype", "{}")).status(), "config.json",
                    "model_type");
  ExpectErrorNaming(
      LoadHfConfig(WriteConfig("badcb", R"({"model_type": "qwen3", "quantization_config":
                   {"quant_method": "exl3", "codebook": "lcg"}})"))
          .status(),
      "quantization_config", "codebook");
  ExpectErrorNaming(
      LoadHfConfig(WriteConfig("badhb", R"({"model_type": "qwen3", "quantization_config":
                   {"quant_method": "exl3", "head_bits": 9}})"))
          .status(),
      "quantization_config", "head_bits");
  ExpectErrorNaming(LoadHfConfig(WriteConfig("nolayers", R"({"model_type": "qwen3",
                   "dflash_config": {"mask_token_id": 5}})"))
                        .status(),
                    "config.json", "target_layer_ids");
  ExpectErrorNaming(LoadHfConfig(WriteConfig("nomask", R"({"model_type": "qwen3",
                   "dflash_config": {"target_layer_ids": [1]}})"))
                        .status(),
                    "config.json", "mask_token_id");
  EXPECT_EQ(LoadHfConfig(WriteConfig("missing_dir", "{}") + "/nope").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace twinspan
