// twinspan-exl3 dequant-model (tools/exl3/dense_export.h) on exllamav3's real Qwen3.5 conversion
// (shared/golden/exl3_qwen3_5_tiny): every EXL3 linear becomes the .weight exl3::DequantizeDense
// gives, transposed, bit for bit in f32; the dense model then runs in our target and its logits
// follow the EXL3 model's (they differ only by the EXL3 forward's fp16 activation rounding).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/exl3/dequant.h"
#include "common/exl3/weight.h"
#include "common/safetensors/checkpoint.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "services/target/target_model.h"
#include "tests/testing/golden.h"
#include "tools/exl3/dense_export.h"

namespace twinspan::exl3 {
namespace {

namespace fs = std::filesystem;

std::vector<float> Logits(const std::string& dir, const std::vector<int32_t>& ids) {
  target::TargetOptions options;
  options.context = 64;
  options.kv_dtype = cpu::KvDtype::kF32;
  auto model = target::OpenTargetModel(dir, options);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return {};
  auto state = (*model)->NewSequence();
  target::ForwardRequest request;
  request.tokens = ids;
  target::ForwardResult result;
  EXPECT_TRUE((*model)->Forward(**state, request, &result).ok());
  return result.logits;
}

TEST(Exl3DequantModelTest, DenseCheckpointMatchesTheExl3One) {
  const std::string in = twinspan::testing::GoldenPath("exl3_qwen3_5_tiny");
  ASSERT_FALSE(in.empty());
  const std::string out = ::testing::TempDir() + "/dequant-model";
  fs::remove_all(out);
  ASSERT_TRUE(ExportDenseModel(in, out, DType::kF32).ok());

  auto exl3 = Checkpoint::Open(in);
  auto dense = Checkpoint::Open(out);
  ASSERT_TRUE(exl3.ok() && dense.ok());
  const std::string prefix = "model.language_model.layers.0.linear_attn.in_proj_qkv";
  auto weight = Weight::Load(**exl3, prefix);
  ASSERT_TRUE(weight.ok());
  const std::vector<float> w = DequantizeDense(*weight);  // [k, n]
  auto stored = ToFloat(*(*dense)->Find(prefix + ".weight"));
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ((*dense)->Find(prefix + ".weight")->shape,
            (std::vector<int64_t>{weight->n(), weight->k()}));
  for (int64_t i = 0; i < weight->k(); ++i) {
    for (int64_t j = 0; j < weight->n(); ++j) {
      ASSERT_EQ((*stored)[j * weight->k() + i], w[i * weight->n() + j]);
    }
  }
  EXPECT_FALSE((*dense)->Has(prefix + ".trellis"));
  EXPECT_EQ((*dense)->Find("model.language_model.layers.0.linear_attn.in_proj_a.weight")->dtype,
            DType::kF16);  // Plain tensors as stored.
  EXPECT_TRUE(fs::exists(fs::path(out) / "tokenizer.json"));

  const std::vector<int32_t> ids = {256, 84, 104, 101, 32, 113, 117, 105};
  const std::vector<float> a = Logits(in, ids), b = Logits(out, ids);
  ASSERT_EQ(a.size(), b.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
    norm += double{a[i]} * a[i];
  }
  EXPECT_LT(std::sqrt(diff / norm), 1e-2);

  // Its config has no quantization_config left, and a second export refuses the full folder.
  auto config = nlohmann::json::parse(std::ifstream(fs::path(out) / "config.json"));
  EXPECT_FALSE(config.contains("quantization_config"));
  EXPECT_EQ(ExportDenseModel(in, out, DType::kF32).code(), absl::StatusCode::kAlreadyExists);
}

}  // namespace
}  // namespace twinspan::exl3
