// LoadDrafterLinear: Q4 tensors load as Q4, dense ones quantize at load when asked, and bad Q4
// tensors are refused by name. The golden DFlash2 tiny checkpoint (golden/README.md section 8) is
// the well-formed drafter, the golden EXL3 Qwen3.5 tiny one (section 4) an EXL3 linear.
#include "services/weights/drafter_linear.h"

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "common/safetensors/checkpoint.h"
#include "common/safetensors/half.h"
#include "common/safetensors/writer.h"
#include "gtest/gtest.h"
#include "services/drafter/drafter_model.h"
#include "tests/testing/golden.h"

namespace twinspan::drafter {
namespace {

constexpr int64_t kOut = 8, kIn = 256;

// One linear "w" [8, 256] as dense F32 or as Q4 parts; `edit` may spoil them.
std::unique_ptr<Checkpoint> Write(const std::string& name, bool q4,
                                  void (*edit)(std::vector<OwnedTensor>&) = nullptr) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> dense(kOut * kIn);
  for (float& v : dense) v = normal(rng);
  std::vector<OwnedTensor> tensors;
  if (q4) {
    auto w = cpu::Q4Weight::Quantize("w", kOut, kIn, dense);
    EXPECT_TRUE(w.ok());
    tensors.push_back(
        OwnedTensor::FromRaw("w.q4_codes", DType::kU8, {kOut, kIn / 2},
                             std::vector<uint8_t>(w->codes().begin(), w->codes().end())));
    tensors.push_back(
        OwnedTensor::FromRaw("w.q4_scales", DType::kF16, {kOut, kIn / 128},
                             std::vector<uint16_t>(w->scales().begin(), w->scales().end())));
    tensors.push_back(
        OwnedTensor::FromRaw("w.q4_offsets", DType::kF16, {kOut, kIn / 128},
                             std::vector<uint16_t>(w->offsets().begin(), w->offsets().end())));
  } else {
    tensors.push_back(OwnedTensor::FromFloats("w.weight", {kOut, kIn}, dense));
    dense.resize(kOut * 192);  // in_features not a multiple of 128.
    tensors.push_back(OwnedTensor::FromFloats("v.weight", {kOut, 192}, dense));
  }
  if (edit != nullptr) edit(tensors);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("drafter_linear_test_" + name + ".safetensors"))
          .string();
  EXPECT_TRUE(WriteSafetensors(path, tensors).ok());
  auto checkpoint = Checkpoint::Open(path);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.status();
  return *std::move(checkpoint);
}

TEST(DrafterLinearTest, Q4TensorsLoadAsQ4WhateverTheBits) {
  const auto checkpoint = Write("q4", true);
  for (const LinearBits bits : {LinearBits::kAsStored, LinearBits::kQ4}) {
    auto w = LoadDrafterLinear(*checkpoint, "w", kOut, kIn, bits);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_TRUE(w->is_q4());
    EXPECT_EQ(w->out_features(), kOut);
    EXPECT_EQ(w->in_features(), kIn);
  }
}

TEST(DrafterLinearTest, DenseQuantizesAtLoadOnlyWhenAsked) {
  const auto checkpoint = Write("dense", false);
  auto stored = LoadDrafterLinear(*checkpoint, "w", kOut, kIn, LinearBits::kAsStored);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_FALSE(stored->is_q4());
  auto q4 = LoadDrafterLinear(*checkpoint, "w", kOut, kIn, LinearBits::kQ4);
  ASSERT_TRUE(q4.ok()) << q4.status();
  ASSERT_TRUE(q4->is_q4());
  std::vector<float> values(stored->dense_row(0), stored->dense_row(0) + kOut * kIn);
  auto want = cpu::Q4Weight::Quantize("w", kOut, kIn, values);
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(want->Dequantize(), q4->q4()->Dequantize());
}

TEST(DrafterLinearTest, BadQ4TensorsAreRefusedByName) {
  const auto wrong_dtype = Write("dtype", true, [](std::vector<OwnedTensor>& t) {
    t[1].dtype = DType::kBF16;  // Same bytes, wrong dtype.
  });
  auto w = LoadDrafterLinear(*wrong_dtype, "w", kOut, kIn, LinearBits::kAsStored);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(w.status().message().find("w.q4_scales"), std::string::npos) << w.status();

  const auto wrong_shape = Write("shape", true, [](std::vector<OwnedTensor>& t) {
    t[0].shape = {kOut * 2, kIn / 4};
  });
  w = LoadDrafterLinear(*wrong_shape, "w", kOut, kIn, LinearBits::kAsStored);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("w.q4_codes"), std::string::npos) << w.status();

  const auto missing = Write("missing", true, [](std::vector<OwnedTensor>& t) { t.pop_back(); });
  w = LoadDrafterLinear(*missing, "w", kOut, kIn, LinearBits::kAsStored);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(w.status().message().find("w.q4_offsets"), std::string::npos) << w.status();

  const auto infinite = Write("inf", true, [](std::vector<OwnedTensor>& t) {
    const uint16_t inf = 0x7c00;
    std::memcpy(t[1].bytes.data(), &inf, 2);
  });
  EXPECT_FALSE(LoadDrafterLinear(*infinite, "w", kOut, kIn, LinearBits::kAsStored).ok());

  const auto q4 = Write("q4_shape", true);
  EXPECT_FALSE(LoadDrafterLinear(*q4, "w", kOut, kIn + 128, LinearBits::kAsStored).ok());
  const auto dense = Write("dense_unaligned", false);
  ASSERT_TRUE(LoadDrafterLinear(*dense, "v", kOut, 192, LinearBits::kAsStored).ok());
  w = LoadDrafterLinear(*dense, "v", kOut, 192, LinearBits::kQ4);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(w.status().message().find("Q4 weight v"), std::string::npos) << w.status();
}

TEST(DrafterLinearTest, Exl3LinearsAreNotRequantized) {
  auto checkpoint = Checkpoint::Open(testing::GoldenPath("exl3_qwen3_5_tiny"));
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  const std::string prefix = "model.language_model.layers.0.mlp.up_proj";
  auto stored = LoadDrafterLinear(**checkpoint, prefix, 512, 256, LinearBits::kAsStored);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_TRUE(stored->is_exl3());
  auto q4 = LoadDrafterLinear(**checkpoint, prefix, 512, 256, LinearBits::kQ4);
  ASSERT_FALSE(q4.ok());
  EXPECT_EQ(q4.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(q4.status().message().find(prefix), std::string::npos) << q4.status();
}

TEST(DrafterLinearTest, ModelOpensWithEveryLinearButFcAtFourBits) {
  auto model = DrafterModel::Open(testing::GoldenPath("dflash2_drafter_tiny/model"),
                                  {.linear_bits = LinearBits::kQ4});
  ASSERT_TRUE(model.ok()) << model.status();
  const DrafterWeights& w = (*model)->weights();
  EXPECT_FALSE(w.fc.is_q4());  // As stored: the target may fuse taps with it.
  for (const DrafterLayerWeights& layer : w.layers) {
    for (const cpu::LinearWeight* l :
         {&layer.q_proj, &layer.k_proj, &layer.v_proj, &layer.o_proj, &layer.gate_proj,
          &layer.up_proj, &layer.down_proj, &layer.attention_conv->projection,
          &layer.mlp_conv->projection}) {
      EXPECT_TRUE(l->is_q4());
    }
  }
  EXPECT_TRUE(w.selector->hidden_projection.is_q4());
}

}  // namespace
}  // namespace twinspan::drafter
