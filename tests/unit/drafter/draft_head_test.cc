// The two-span head's logits equal the full head's at the same columns, bit for bit (DESIGN.md,
// exactness contract 3), for dense heads and EXL3 heads of every codebook, including a random
// trellis of the Qwen3.8-27B head's shape (248,320 x 5,120).
#include "services/drafter/draft_head.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/exl3/format.h"
#include "common/exl3/span_view.h"
#include "common/exl3/weight.h"
#include "common/safetensors/checkpoint.h"
#include "common/safetensors/half.h"
#include "common/safetensors/writer.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/linear.h"

namespace twinspan::drafter {
namespace {

struct Exl3Head {
  std::string path;
  std::unique_ptr<Checkpoint> checkpoint;  // Outlives the weight.
  cpu::LinearWeight weight;
  ~Exl3Head() { std::remove(path.c_str()); }
};

// Writes a random EXL3 lm_head [k in, n out] with `bits` per weight and loads it.
void MakeExl3Head(exl3::Codebook codebook, int64_t k, int64_t n, int bits, uint32_t seed,
                  Exl3Head& head) {
  std::mt19937 gen(seed);
  std::vector<int16_t> trellis((k / 16) * (n / 16) * 16 * bits);
  for (int16_t& w : trellis) w = static_cast<int16_t>(gen());
  std::uniform_real_distribution<float> scale(0.5f, 1.5f);
  const auto signed_scales = [&](int64_t count) {
    std::vector<uint16_t> v(count);
    for (uint16_t& x : v) x = FloatToHalf((gen() & 1 ? 1.0f : -1.0f) * scale(gen));
    return v;
  };
  std::vector<OwnedTensor> tensors = {
      OwnedTensor::FromRaw("lm_head.trellis", DType::kI16, {k / 16, n / 16, 16 * bits}, trellis),
      OwnedTensor::FromRaw("lm_head.suh", DType::kF16, {k}, signed_scales(k)),
      OwnedTensor::FromRaw("lm_head.svh", DType::kF16, {n}, signed_scales(n))};
  if (codebook == exl3::Codebook::kMcg) {
    tensors.push_back(OwnedTensor::FromRaw("lm_head.mcg", DType::kI32, {},
                                           std::vector<uint32_t>{exl3::kMcgMultiplier}));
  } else if (codebook == exl3::Codebook::kMul1) {
    tensors.push_back(OwnedTensor::FromRaw("lm_head.mul1", DType::kI32, {},
                                           std::vector<uint32_t>{exl3::kMul1Multiplier}));
  }
  head.path = (std::filesystem::temp_directory_path() /
               ("draft_head_test_" + std::to_string(seed) + ".safetensors"))
                  .string();
  ASSERT_TRUE(WriteSafetensors(head.path, tensors).ok());
  auto checkpoint = Checkpoint::Open(head.path);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  head.checkpoint = std::move(*checkpoint);
  auto weight = exl3::Weight::Load(*head.checkpoint, "lm_head");
  ASSERT_TRUE(weight.ok()) << weight.status();
  ASSERT_EQ(weight->codebook(), codebook);
  head.weight = cpu::LinearWeight::Exl3(*weight);
}

std::vector<float> RandomRows(int64_t rows, int64_t h, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(rows * h);
  for (float& v : x) v = normal(gen);
  return x;
}

// Runs the full head and the variant's head and compares every span column bit for bit.
void ExpectSpansEqualFullHead(const cpu::LinearWeight& lm_head, const std::string& spec,
                              int64_t rows) {
  const int64_t vocab = lm_head.out_features(), h = lm_head.in_features();
  const std::vector<float> x = RandomRows(rows, h, 99);
  std::vector<float> full(rows * vocab);
  ASSERT_TRUE(cpu::Linear({}, x.data(), rows, lm_head, full.data()).ok());
  auto variant = MakeHeadVariant(spec, vocab);
  ASSERT_TRUE(variant.ok()) << variant.status();
  const std::unique_ptr<backend::Backend> cpu = cpu::NewCpuBackend(nullptr);
  auto head = DraftHead::Create(*cpu, lm_head, *variant);
  ASSERT_TRUE(head.ok()) << head.status();
  ASSERT_EQ(head->columns(), variant->columns());
  std::vector<float> spans(rows * head->columns());
  auto x_buffer = cpu->AllocateFloats(rows * h);
  auto spans_buffer = cpu->AllocateFloats(rows * head->columns());
  ASSERT_TRUE(x_buffer.ok() && spans_buffer.ok());
  ASSERT_TRUE(cpu->Upload(**x_buffer, 0, x.data(), x.size() * sizeof(float)).ok());
  ASSERT_TRUE(head->Logits(*cpu, (*x_buffer)->floats(), h, rows, (*spans_buffer)->floats()).ok());
  ASSERT_TRUE(cpu->Download(spans.data(), **spans_buffer, 0, spans.size() * sizeof(float)).ok());
  int64_t mismatches = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < head->columns(); ++c) {
      const float a = spans[r * head->columns() + c];
      const float b = full[r * vocab + variant->GlobalId(c)];
      mismatches += std::memcmp(&a, &b, sizeof(float)) != 0;
    }
  }
  EXPECT_EQ(mismatches, 0) << spec;
}

TEST(DraftHeadTest, DenseSpansEqualTheFullHead) {
  const int64_t vocab = 1000, h = 72;
  auto lm_head = cpu::LinearWeight::Dense(vocab, h, RandomRows(vocab, h, 5));
  ASSERT_TRUE(lm_head.ok());
  ExpectSpansEqualFullHead(*lm_head, "0:300,997:1000", 3);
  ExpectSpansEqualFullHead(*lm_head, "full", 2);
}

class Exl3DraftHeadTest : public ::testing::TestWithParam<exl3::Codebook> {};

// 80 blocks of 128: the tail span's view must widen to 64 blocks to plan as the whole head.
TEST_P(Exl3DraftHeadTest, SpansEqualTheFullHeadForEveryCodebook) {
  Exl3Head head;
  ASSERT_NO_FATAL_FAILURE(
      MakeExl3Head(GetParam(), 256, 80 * 128, 3, 10 + static_cast<uint32_t>(GetParam()), head));
  ExpectSpansEqualFullHead(head.weight, "0:4000,10100:10240", 3);
  ExpectSpansEqualFullHead(head.weight, "17:130,5000:5001,10239:10240", 1);
  ExpectSpansEqualFullHead(head.weight, "full", 1);
}

INSTANTIATE_TEST_SUITE_P(Codebooks, Exl3DraftHeadTest,
                         ::testing::Values(exl3::Codebook::k3Inst, exl3::Codebook::kMcg,
                                           exl3::Codebook::kMul1));

TEST(Exl3DraftHeadTest, TwoSpanOfA27BShapedHeadEqualsTheFullHead) {
  Exl3Head head;
  ASSERT_NO_FATAL_FAILURE(MakeExl3Head(exl3::Codebook::kMul1, 5120, 248320, 1, 27, head));
  auto variant = MakeHeadVariant("two-span", 248320);
  ASSERT_TRUE(variant.ok());
  // The tail view takes the last 64 blocks (from column 240,128) and drops 7,904 when packing.
  auto views = exl3::MakeSpanViews(*head.weight.exl3(), variant->spans);
  ASSERT_TRUE(views.ok()) << views.status();
  ASSERT_EQ(views->size(), 2u);
  EXPECT_EQ((*views)[1].weight.first_column(), 240128);
  EXPECT_EQ((*views)[1].drop_front(), 7904);
  EXPECT_EQ((*views)[0].weight.plan(), head.weight.exl3()->plan());
  EXPECT_EQ((*views)[1].weight.plan(), head.weight.exl3()->plan());
  const std::unique_ptr<backend::Backend> cpu = cpu::NewCpuBackend(nullptr);
  auto draft_head = DraftHead::Create(*cpu, head.weight, *variant);
  ASSERT_TRUE(draft_head.ok()) << draft_head.status();
  ExpectSpansEqualFullHead(head.weight, "two-span", 2);
}

}  // namespace
}  // namespace twinspan::drafter
