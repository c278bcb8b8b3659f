// Malformed EXL3 tensors: each gives InvalidArgument naming the file, the tensor and the problem,
// never a crash or an out-of-bounds read (this binary also runs under ASan + UBSan).
#include <functional>
#include <string>
#include <vector>

#include "common/exl3/dequant.h"
#include "common/exl3/weight.h"
#include "gtest/gtest.h"
#include "tests/unit/formats_exl3_fixture.h"

namespace twinspan::exl3 {
namespace {

using testing::OpenTensors;
using testing::SyntheticLinear;
using testing::SyntheticTensors;

OwnedTensor* Named(std::vector<OwnedTensor>& tensors, const std::string& name) {
  for (OwnedTensor& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

void Erase(std::vector<OwnedTensor>& tensors, const std::string& name) {
  std::erase_if(tensors, [&](const OwnedTensor& t) { return t.name == name; });
}

struct BadCase {
  std::string label;
  std::function<void(std::vector<OwnedTensor>&)> corrupt;
  std::string tensor;   // Expected in the message.
  std::string problem;  // Expected in the message.
};

TEST(Exl3BadInputTest, EachProblemNamesFileTensorAndProblem) {
  const std::vector<BadCase> cases = {
      {"trellis F16", [](auto& t) { Named(t, "lin.trellis")->dtype = DType::kF16; }, "lin.trellis",
       "I16"},
      {"trellis 2-D",
       [](auto& t) {
         Named(t, "lin.trellis")->shape = {16, 24 * 48};
       },
       "lin.trellis", "[k/16, n/16, 16*K]"},
      {"K = 9",
       [](auto& t) {
         Named(t, "lin.trellis")->shape = {4, 8, 144};
         Named(t, "lin.trellis")->bytes.resize(4 * 8 * 144 * 2);
       },
       "lin.trellis", "K in 1..8"},
      {"K = 0",
       [](auto& t) {
         Named(t, "lin.trellis")->shape = {16, 24, 0};
         Named(t, "lin.trellis")->bytes.clear();
       },
       "lin.trellis", "K in 1..8"},
      {"half-integer K",
       [](auto& t) {
         Named(t, "lin.trellis")->shape = {16, 24 * 2, 24};
       },
       "lin.trellis", "half-integer"},
      {"k not a multiple of 128",
       [](auto& t) {
         Named(t, "lin.trellis")->shape = {4, 96, 48};  // k = 64.
       },
       "lin.trellis", "multiples of 128"},
      {"suh F32",
       [](auto& t) {
         Named(t, "lin.suh")->dtype = DType::kF32;
         Named(t, "lin.suh")->shape = {128};
       },
       "lin.suh", "F16 [256]"},
      {"svh wrong length",
       [](auto& t) {
         Named(t, "lin.svh")->shape = {192};
         Named(t, "lin.svh")->bytes.resize(192 * 2);
       },
       "lin.svh", "F16 [384]"},
      {"svh missing", [](auto& t) { Erase(t, "lin.svh"); }, "lin.sv", "neither"},
      {"both markers",
       [](auto& t) {
         t.push_back(OwnedTensor::FromRaw("lin.mcg", DType::kI32, {},
                                          std::vector<uint32_t>{kMcgMultiplier}));
       },
       "lin.mul1", "both mcg and mul1"},
      {"marker I64",
       [](auto& t) {
         *Named(t, "lin.mul1") = OwnedTensor::FromInt64("lin.mul1", {}, {kMul1Multiplier});
       },
       "lin.mul1", "0-dim I32"},
      {"marker 1-D", [](auto& t) { Named(t, "lin.mul1")->shape = {1}; }, "lin.mul1", "0-dim I32"},
      {"marker value",
       [](auto& t) {
         *Named(t, "lin.mul1") =
             OwnedTensor::FromRaw("lin.mul1", DType::kI32, {}, std::vector<uint32_t>{12345});
       },
       "lin.mul1", "locked"},
      {"bias wrong shape",
       [](auto& t) {
         t.push_back(
             OwnedTensor::FromRaw("lin.bias", DType::kF16, {2, 192}, std::vector<uint16_t>(384)));
       },
       "lin.bias", "F16 [384]"},
      {"pre-release scale",
       [](auto& t) { t.push_back(OwnedTensor::FromFloats("lin.scale", {}, {1.0f})); }, "lin.scale",
       "no longer used"},
  };
  int index = 0;
  for (const BadCase& bad : cases) {
    SCOPED_TRACE(bad.label);
    std::vector<OwnedTensor> tensors = SyntheticTensors({});  // 256 x 384, K = 3, mul1.
    bad.corrupt(tensors);
    const std::string file = "exl3_bad_" + std::to_string(index++) + ".safetensors";
    auto ckpt = OpenTensors(file, tensors);
    ASSERT_NE(ckpt, nullptr);
    absl::StatusOr<Weight> w = Weight::Load(*ckpt, "lin");
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument) << w.status();
    EXPECT_NE(w.status().message().find(file), std::string::npos) << w.status();
    EXPECT_NE(w.status().message().find(bad.tensor), std::string::npos) << w.status();
    EXPECT_NE(w.status().message().find(bad.problem), std::string::npos) << w.status();
  }
}

TEST(Exl3BadInputTest, LegacySignWordsAreRead) {
  std::vector<OwnedTensor> tensors = SyntheticTensors({.codebook = Codebook::k3Inst});
  Erase(tensors, "lin.suh");
  Erase(tensors, "lin.svh");
  std::vector<uint16_t> su(256 / 16, 0), sv(384 / 16, 0xffff);
  su[1] = 0x0005;  // Elements 16 and 18 are negative.
  tensors.push_back(OwnedTensor::FromRaw("lin.su", DType::kI16, {16}, su));
  tensors.push_back(OwnedTensor::FromRaw("lin.sv", DType::kI16, {24}, sv));
  auto ckpt = OpenTensors("exl3_legacy.safetensors", tensors);
  ASSERT_NE(ckpt, nullptr);
  absl::StatusOr<Weight> w = Weight::Load(*ckpt, "lin");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->codebook(), Codebook::k3Inst);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(w->suh()[i], (i == 16 || i == 18) ? -1.0f : 1.0f) << i;
  for (int i = 0; i < 384; ++i) EXPECT_EQ(w->svh()[i], -1.0f);
  EXPECT_EQ(DequantizeDense(*w).size(), 256u * 384u);

  Named(tensors, "lin.su")->shape = {8, 2};
  auto bad = OpenTensors("exl3_legacy_bad.safetensors", tensors);
  ASSERT_NE(bad, nullptr);
  absl::StatusOr<Weight> refused = Weight::Load(*bad, "lin");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("lin.su"), std::string::npos) << refused.status();
  EXPECT_NE(refused.status().message().find("I16 [16]"), std::string::npos) << refused.status();
}

TEST(Exl3BadInputTest, EveryKDecodesWithoutReadingPastTheTile) {
  // Exact-size tensors under ASan: decoding the last tile of every K stays inside the trellis.
  for (int bits = kMinBits; bits <= kMaxBits; ++bits) {
    for (Codebook cb : {Codebook::k3Inst, Codebook::kMcg, Codebook::kMul1}) {
      SyntheticLinear spec{.k = 128, .n = 128, .bits = bits, .codebook = cb};
      auto ckpt =
          OpenTensors("exl3_k" + std::to_string(bits) + ".safetensors", SyntheticTensors(spec));
      ASSERT_NE(ckpt, nullptr);
      absl::StatusOr<Weight> w = Weight::Load(*ckpt, "lin");
      ASSERT_TRUE(w.ok()) << w.status();
      EXPECT_EQ(w->bits(), bits);
      const std::vector<float> dense = DequantizeDense(*w);
      for (float v : dense) ASSERT_TRUE(std::isfinite(v));
    }
  }
}

}  // namespace
}  // namespace twinspan::exl3
