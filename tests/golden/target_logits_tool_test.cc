// twinspan-logits, run as a command, reproduces the golden references (shared/golden/README.md):
// HF transformers fp32 for hf_qwen3_tiny and hf_qwen3_5_tiny (rel_fro 1e-4), exllamav3's logits for
// exl3_qwen3_tiny (rel_fro 5e-3) and exl3_qwen3_5_tiny (rel_fro 3e-2).
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/golden/target_golden_util.h"
#include "tests/testing/golden.h"

namespace twinspan::target {
namespace {

using testing::ReferenceFile;
using testing::RelFro;

// Runs the tool; returns the output path ("" on failure).
std::string RunTool(const std::string& model_dir, const std::vector<int32_t>& ids,
                    const std::string& name, const std::string& extra = "") {
  const std::string out =
      (std::filesystem::temp_directory_path() / ("twinspan_logits_" + name + ".safetensors"))
          .string();
  const std::string command = std::string(TWINSPAN_LOGITS_BINARY) + " --model " + model_dir +
                              " --ids " + absl::StrJoin(ids, ",") + " --out " + out + " " + extra;
  const int rc = std::system(command.c_str());
  EXPECT_EQ(rc, 0) << command;
  return rc == 0 ? out : "";
}

class HfLogitsToolTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HfLogitsToolTest, ReproducesTransformersLogitsAndHiddenStates) {
  const std::string dir = twinspan::testing::GoldenPath(GetParam());
  ASSERT_FALSE(dir.empty());
  ReferenceFile ref(dir + "/reference.safetensors");
  for (int i = 0; i < 3; ++i) {
    const std::string n = std::to_string(i);
    const std::string out =
        RunTool(dir + "/model", ref.Ids("input_ids_" + n), GetParam() + n, "--threads 2");
    ASSERT_FALSE(out.empty());
    ReferenceFile ours(out);
    EXPECT_LE(RelFro(ours.Floats("logits"), ref.Floats("logits_" + n)), 1e-4) << n;
    EXPECT_LE(RelFro(ours.Floats("hidden_states"), ref.Floats("hidden_states_" + n)), 1e-4) << n;
    EXPECT_LE(RelFro(ours.Floats("layer_outputs"), ref.Floats("layer_outputs_" + n)), 1e-4) << n;
    std::filesystem::remove(out);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, HfLogitsToolTest,
                         ::testing::Values("hf_qwen3_tiny", "hf_qwen3_5_tiny"));

TEST(LogitsToolTest, ReproducesExllamav3LogitsOfExl3Qwen35Tiny) {
  const std::string dir = twinspan::testing::GoldenPath("exl3_qwen3_5_tiny");
  const std::string ref_dir = twinspan::testing::GoldenPath("exl3_qwen3_5_tiny_ref");
  ASSERT_FALSE(dir.empty() || ref_dir.empty());
  ReferenceFile ref(ref_dir + "/logits.safetensors");
  for (int i = 0; i < 3; ++i) {
    const std::string n = std::to_string(i);
    const std::string out = RunTool(dir, ref.Ids("input_ids_" + n), "exl3_qwen3_5_" + n);
    ASSERT_FALSE(out.empty());
    ReferenceFile ours(out);
    EXPECT_LE(RelFro(ours.Floats("logits"), ref.Floats("exl3_logits_" + n)), 3e-2) << n;
    std::filesystem::remove(out);
  }
}

TEST(LogitsToolTest, ReproducesExllamav3LogitsOfExl3Qwen3Tiny) {
  const std::string dir = twinspan::testing::GoldenPath("exl3_qwen3_tiny");
  const std::string ref_dir = twinspan::testing::GoldenPath("exl3_qwen3_tiny_ref");
  ASSERT_FALSE(dir.empty() || ref_dir.empty());
  ReferenceFile ref(ref_dir + "/logits.safetensors");
  const std::string out = RunTool(dir, ref.Ids("input_ids"), "exl3_qwen3");
  ASSERT_FALSE(out.empty());
  ReferenceFile ours(out);
  EXPECT_LE(RelFro(ours.Floats("logits"), ref.Floats("exl3_logits")), 5e-3);
  std::filesystem::remove(out);
}

TEST(LogitsToolTest, RejectsIdsOutsideTheVocabulary) {
  const std::string dir = twinspan::testing::GoldenPath("hf_qwen3_tiny");
  ASSERT_FALSE(dir.empty());
  const std::string command = std::string(TWINSPAN_LOGITS_BINARY) + " --model " + dir +
                              "/model --ids 1,4096 --out /dev/null 2>/dev/null";
  EXPECT_NE(std::system(command.c_str()), 0);
}

}  // namespace
}  // namespace twinspan::target
