// twinspan-draft end to end on golden/dflash_drafter_tiny (z-lab/dflash DFlashDraftModel over
// golden/hf_qwen3_tiny, golden/README.md section 7): the written logits and proposals are the
// reference's, and the two-span file holds the full head's logits at its columns.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "common/safetensors/checkpoint.h"
#include "gtest/gtest.h"
#include "tests/golden/drafter/golden_tensors.h"
#include "tests/testing/golden.h"

namespace twinspan::drafter {
namespace {

using ::twinspan::testing::ExpectRelFro;
using ::twinspan::testing::Floats;
using ::twinspan::testing::GoldenPath;
using ::twinspan::testing::Ints;

std::unique_ptr<Checkpoint> RunTool(const std::string& head, const std::string& name) {
  auto reference = Checkpoint::Open(GoldenPath("dflash_drafter_tiny/reference.safetensors"));
  EXPECT_TRUE(reference.ok()) << reference.status();
  const std::string out = (std::filesystem::temp_directory_path() / name).string();
  const std::string command =
      std::string(TWINSPAN_DRAFT_BINARY) + " --target " + GoldenPath("hf_qwen3_tiny/model") +
      " --drafter " + GoldenPath("dflash_drafter_tiny/model") + " --ids " +
      absl::StrJoin(Ints(**reference, "prompt_ids"), ",") + " --head " + head + " --out " + out;
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  auto written = Checkpoint::Open(out);
  EXPECT_TRUE(written.ok()) << written.status();
  return written.ok() ? std::move(*written) : nullptr;
}

TEST(DraftToolGoldenTest, WritesTheReferenceLogitsAndProposals) {
  auto reference = Checkpoint::Open(GoldenPath("dflash_drafter_tiny/reference.safetensors"));
  ASSERT_TRUE(reference.ok());
  auto out = RunTool("full", "twinspan_draft_full.safetensors");
  ASSERT_NE(out, nullptr);
  const TensorView logits = *out->Get("logits");
  EXPECT_EQ(logits.dtype, DType::kF32);
  EXPECT_EQ(logits.shape, (std::vector<int64_t>{7, 4096}));
  ExpectRelFro(Floats(*out, "logits"), Floats(**reference, "draft_logits"), 1e-4, "logits");
  EXPECT_EQ(Ints(*out, "proposals"), Ints(**reference, "draft_token_ids"));
  EXPECT_EQ(Ints(*out, "pending"), std::vector<int64_t>{3619});
}

TEST(DraftToolGoldenTest, SpanFileHoldsTheFullHeadsLogitsAtItsColumns) {
  auto full = RunTool("full", "twinspan_draft_full2.safetensors");
  auto spans = RunTool("0:1000,2000:2100,4000:4096", "twinspan_draft_spans.safetensors");
  ASSERT_NE(full, nullptr);
  ASSERT_NE(spans, nullptr);
  const std::vector<float> full_logits = Floats(*full, "logits");
  const std::vector<float> span_logits = Floats(*spans, "logits");
  const std::vector<int64_t> columns = Ints(*spans, "column_ids");
  ASSERT_EQ(columns.size(), 1196u);
  EXPECT_EQ(columns[1000], 2000);
  EXPECT_EQ(columns[1100], 4000);
  for (size_t r = 0; r < 7; ++r) {
    for (size_t c = 0; c < columns.size(); ++c) {
      ASSERT_EQ(span_logits[r * columns.size() + c], full_logits[r * 4096 + columns[c]])
          << r << " " << c;
    }
  }
}

}  // namespace
}  // namespace twinspan::drafter
