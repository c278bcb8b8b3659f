#include "tests/unit/formats_exl3_fixture.h"

#include <filesystem>
#include <random>

#include "common/safetensors/half.h"
#include "gtest/gtest.h"

namespace twinspan::testing {

std::vector<OwnedTensor> SyntheticTensors(const SyntheticLinear& spec) {
  std::mt19937 rng(spec.seed);
  std::vector<int16_t> trellis(static_cast<size_t>(spec.k / 16 * spec.n / 16 * 16 * spec.bits));
  for (int16_t& word : trellis) word = static_cast<int16_t>(rng() & 0xffff);
  std::uniform_real_distribution<float> magnitude(0.5f, 1.5f);
  auto scales = [&](int64_t size, float unit) {
    std::vector<uint16_t> out(static_cast<size_t>(size));
    for (uint16_t& v : out) v = FloatToHalf((rng() & 1 ? -unit : unit) * magnitude(rng));
    return out;
  };
  std::vector<OwnedTensor> tensors;
  tensors.push_back(OwnedTensor::FromRaw(spec.prefix + ".trellis", DType::kI16,
                                         {spec.k / 16, spec.n / 16, 16 * spec.bits}, trellis));
  tensors.push_back(
      OwnedTensor::FromRaw(spec.prefix + ".suh", DType::kF16, {spec.k}, scales(spec.k, 0.01f)));
  tensors.push_back(
      OwnedTensor::FromRaw(spec.prefix + ".svh", DType::kF16, {spec.n}, scales(spec.n, 1.0f)));
  if (spec.codebook == exl3::Codebook::kMcg) {
    tensors.push_back(OwnedTensor::FromRaw(spec.prefix + ".mcg", DType::kI32, {},
                                           std::vector<uint32_t>{exl3::kMcgMultiplier}));
  } else if (spec.codebook == exl3::Codebook::kMul1) {
    tensors.push_back(OwnedTensor::FromRaw(spec.prefix + ".mul1", DType::kI32, {},
                                           std::vector<uint32_t>{exl3::kMul1Multiplier}));
  }
  if (spec.bias) {
    tensors.push_back(
        OwnedTensor::FromRaw(spec.prefix + ".bias", DType::kF16, {spec.n}, scales(spec.n, 0.1f)));
  }
  return tensors;
}

std::string WriteTensors(const std::string& file_name, const std::vector<OwnedTensor>& tensors) {
  const std::string path = (std::filesystem::path(::testing::TempDir()) / file_name).string();
  const absl::Status status = WriteSafetensors(path, tensors);
  EXPECT_TRUE(status.ok()) << status;
  return path;
}

std::unique_ptr<Checkpoint> OpenTensors(const std::string& file_name,
                                        const std::vector<OwnedTensor>& tensors) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt =
      Checkpoint::Open(WriteTensors(file_name, tensors));
  EXPECT_TRUE(ckpt.ok()) << ckpt.status();
  return ckpt.ok() ? *std::move(ckpt) : nullptr;
}

std::vector<float> RandomRows(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (float& v : out) v = value(rng);
  return out;
}

}  // namespace twinspan::testing
