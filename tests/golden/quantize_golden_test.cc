// Reference: exllamav3 v1.4.1 (commit 4f8ad01) quantize_exl3, shared/golden/exl3_linear/ (README
// section 1): on the same W and Xcal (H = Xcal^T Xcal), our proxy error in the original basis is at
// most 1.05x exllamav3's, both decoded from their stored tensors by exl3::DequantizeDense. A
// representative subset; twinspan-quantize-compare runs all 63 cases (docs/quantize.md). Also the
// calibration rows built from text under a real checkpoint's tokenizer.
#include <string>
#include <vector>

#include "common/exl3/quantize/tile_encoder.h"
#include "common/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "kernels/cpu/parallel.h"
#include "tests/testing/golden.h"
#include "tools/quantize/calibration.h"
#include "tools/quantize/golden_linears.h"

namespace twinspan::quantize {
namespace {

TEST(QuantizeGoldenTest, ProxyErrorAtMostExllamav3s) {
  const std::string golden = twinspan::testing::GoldenPath("");
  ASSERT_FALSE(golden.empty());
  cpu::ThreadPool pool(2);
  const exl3::quantize::CpuTileEncoder encoder(&pool);
  const exl3::quantize::LinearQuantOptions options;  // Matched Hessian, out scales: the defaults.
  const std::vector<std::pair<std::string, std::vector<std::string>>> subset = {
      {"exl3_linear_256x384.safetensors", {"mcg.K3", "mul1.K6"}},
      {"exl3_linear_512x256.safetensors", {"3inst.K4"}}};
  for (const auto& [file, cases] : subset) {
    absl::StatusOr<std::vector<GoldenLinearCase>> results =
        CompareGoldenLinears(&pool, encoder, golden, file, cases, options);
    ASSERT_TRUE(results.ok()) << results.status();
    ASSERT_EQ(results->size(), cases.size()) << file;
    for (const GoldenLinearCase& c : *results) {
      EXPECT_LE(c.ours, 1.05 * c.theirs) << file << " " << c.codebook << " K=" << c.bits
                                         << ": ours " << c.ours << ", theirs " << c.theirs;
    }
  }
}

TEST(QuantizeGoldenTest, CalibrationTextUnderTheModelsTokenizer) {
  const std::string model = twinspan::testing::GoldenPath("exl3_qwen3_5_tiny");
  ASSERT_FALSE(model.empty());
  auto tok = tokenizer::Tokenizer::Open(model);
  ASSERT_TRUE(tok.ok()) << tok.status();
  const std::string file = ::testing::TempDir() + "/calibration.txt";
  std::string text;
  for (int i = 0; i < 40; ++i) text += "The quick brown fox jumps over the lazy dog. ";
  FILE* f = std::fopen(file.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  absl::StatusOr<Calibration> cal = BuildCalibration({file, tok->get(), 259, 14, 64, 3});
  ASSERT_TRUE(cal.ok()) << cal.status();
  EXPECT_EQ(cal->rows.size(), 14u);
  EXPECT_EQ(cal->random_rows, 2);  // 14 * 20 / 135, at least one.
  EXPECT_EQ(cal->text_rows, 12);
  auto ids = (*tok)->Encode(text);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(cal->rows[1], std::vector<int32_t>(ids->begin() + 64, ids->begin() + 128));
  for (int32_t id : cal->rows.back()) EXPECT_LT(id, 259);
  // A text too short for one row is refused; one too short for its share is topped up at random.
  EXPECT_EQ(BuildCalibration({file, tok->get(), 259, 4, 100000, 3}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Calibration> few = BuildCalibration({file, tok->get(), 259, 100, 1000, 3});
  ASSERT_TRUE(few.ok()) << few.status();
  EXPECT_EQ(few->text_rows, static_cast<int64_t>(ids->size()) / 1000);
  EXPECT_NE(few->description.find("random rows make up the rest"), std::string::npos);
}

}  // namespace
}  // namespace twinspan::quantize
