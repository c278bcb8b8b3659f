// Reference: exllamav3 v1.4.1's converter output in shared/golden/exl3_qwen3_tiny/ and
// exl3_qwen3_5_tiny/, whose quantization_config.json indexes every stored tensor (shape, bytes,
// bits_per_weight, codebook multiplier). Our inspection must agree on every tensor; the dense
// export must equal exllamav3's w_dense_fp32 (rel_fro 1e-5) in HF orientation.
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "common/config/hf_config.h"
#include "common/config/json_file.h"
#include "common/safetensors/checkpoint.h"
#include "gtest/gtest.h"
#include "tests/testing/golden.h"
#include "tools/exl3/dense_export.h"
#include "tools/exl3/inspect.h"

namespace twinspan::exl3 {
namespace {

void CheckAgainstStorageIndex(const std::string& model) {
  const std::string dir = testing::GoldenPath(model);
  ASSERT_FALSE(dir.empty());
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::Open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  absl::StatusOr<CheckpointReport> report = InspectCheckpoint(**ckpt);
  ASSERT_TRUE(report.ok()) << report.status();
  absl::StatusOr<nlohmann::json> index = LoadJsonFile(dir + "/quantization_config.json");
  ASSERT_TRUE(index.ok()) << index.status();

  std::map<std::string, const LinearInfo*> linears;
  for (const LinearInfo& l : report->linears) linears[l.prefix] = &l;
  std::map<std::string, const PlainInfo*> plain;
  for (const PlainInfo& p : report->plain) plain[p.name] = &p;

  size_t exl3_modules = 0;
  std::set<std::string> indexed;
  for (const auto& [module, entry] : (*index)["tensor_storage"].items()) {
    SCOPED_TRACE(module);
    int64_t module_bytes = 0;
    for (const auto& [name, info] : entry["stored_tensors"].items()) {
      indexed.insert(name);
      module_bytes += info["n_bytes"].get<int64_t>();
      const TensorView* view = (*ckpt)->Find(name);
      ASSERT_NE(view, nullptr) << name;
      EXPECT_EQ(view->shape, info["shape"].get<std::vector<int64_t>>()) << name;
      EXPECT_EQ(static_cast<int64_t>(view->nbytes), info["n_bytes"].get<int64_t>()) << name;
    }
    if (entry.value("quant_format", "") != "exl3") {
      for (const auto& [name, info] : entry["stored_tensors"].items()) {
        EXPECT_EQ(plain.count(name), 1u) << name << " should be a plain tensor";
      }
      continue;
    }
    ++exl3_modules;
    ASSERT_EQ(linears.count(module), 1u);
    const LinearInfo& l = *linears[module];
    EXPECT_EQ(l.bits, entry["bits_per_weight"].get<int>());
    EXPECT_EQ(l.codebook, entry.contains("mul1_multiplier")  ? Codebook::kMul1
                          : entry.contains("mcg_multiplier") ? Codebook::kMcg
                                                             : Codebook::k3Inst);
    const auto trellis_shape =
        entry["stored_tensors"][module + ".trellis"]["shape"].get<std::vector<int64_t>>();
    EXPECT_EQ(l.k, trellis_shape[0] * 16);
    EXPECT_EQ(l.n, trellis_shape[1] * 16);
    EXPECT_EQ(l.bytes, module_bytes);
  }
  EXPECT_EQ(report->linears.size(), exl3_modules);
  // The index leaves out parameters that belong to no linear (Qwen3.5's A_log, dt_bias, conv1d):
  // those must be plain tensors.
  for (const std::string& name : (*ckpt)->Names()) {
    if (indexed.count(name) == 0) EXPECT_EQ(plain.count(name), 1u) << name;
  }

  absl::StatusOr<HfConfig> config = LoadHfConfig(dir);
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(config->quantization.has_value());
  ASSERT_EQ(linears.count("lm_head"), 1u);
  EXPECT_EQ(linears["lm_head"]->bits, config->quantization->head_bits);
  EXPECT_DOUBLE_EQ(report->mean_bits("lm_head"), config->quantization->bits.value_or(-1));
}

TEST(Exl3CheckpointGoldenTest, Qwen3TinyMatchesItsStorageIndex) {
  CheckAgainstStorageIndex("exl3_qwen3_tiny");
}

TEST(Exl3CheckpointGoldenTest, Qwen35TinyMatchesItsStorageIndex) {
  CheckAgainstStorageIndex("exl3_qwen3_5_tiny");
}

TEST(Exl3CheckpointGoldenTest, Qwen3TinyHeadIsK6Mul1) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt =
      Checkpoint::Open(testing::GoldenPath("exl3_qwen3_tiny"));
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  absl::StatusOr<CheckpointReport> report = InspectCheckpoint(**ckpt);
  ASSERT_TRUE(report.ok());
  const LinearInfo& head = report->linears[0];
  EXPECT_EQ(head.prefix, "lm_head");  // Sorted first.
  EXPECT_EQ(head.k, 128);
  EXPECT_EQ(head.n, 151936);
  EXPECT_EQ(head.bits, 6);
  EXPECT_EQ(head.codebook, Codebook::kMul1);
  EXPECT_EQ(report->linears.size(), 1u + 2 * 7);
}

TEST(Exl3CheckpointGoldenTest, DenseExportIsHfOrientedWDense) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt =
      Checkpoint::Open(testing::GoldenPath("exl3_linear/exl3_linear_256x384.safetensors"));
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  const std::string out =
      (std::filesystem::path(::testing::TempDir()) / "exl3_dense_export.safetensors").string();
  ASSERT_TRUE(ExportDense(**ckpt, "mcg.K4", out).ok());
  absl::StatusOr<std::unique_ptr<Checkpoint>> exported = Checkpoint::Open(out);
  ASSERT_TRUE(exported.ok()) << exported.status();
  absl::StatusOr<TensorView> weight = (*exported)->Get("weight");
  ASSERT_TRUE(weight.ok());
  EXPECT_EQ(weight->dtype, DType::kF32);
  EXPECT_EQ(weight->shape, (std::vector<int64_t>{384, 256}));
  const std::vector<float> hf = *ToFloat(*weight);
  const std::vector<float> ref = *ToFloat(*(*ckpt)->Get("mcg.K4.w_dense_fp32"));  // [k, n]
  double num = 0, den = 0;
  for (int64_t i = 0; i < 256; ++i) {
    for (int64_t j = 0; j < 384; ++j) {
      const double d = double{hf[j * 256 + i]} - ref[i * 384 + j];
      num += d * d;
      den += double{ref[i * 384 + j]} * ref[i * 384 + j];
    }
  }
  EXPECT_LE(std::sqrt(num / den), 1e-5);
  EXPECT_FALSE((*exported)->Has("bias"));
  EXPECT_EQ(ExportDense(**ckpt, "nope.K4", out).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace twinspan::exl3
