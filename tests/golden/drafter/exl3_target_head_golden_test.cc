// A drafter over an EXL3 target: golden/exl3_qwen3_tiny (exllamav3's converter output, README
// section 2; a 6-bit mul1 lm_head of 151,936 x 128). Drafter::Open shares the target's EXL3 head,
// and the two-span variant's logits equal the full variant's at the same columns, bit for bit.
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "services/drafter/drafter.h"
#include "tests/golden/drafter/random_drafter.h"
#include "tests/testing/golden.h"

namespace twinspan::drafter {
namespace {

absl::StatusOr<Proposal> ProposeWith(const std::string& drafter_dir, const std::string& head) {
  auto drafter =
      Drafter::Open(drafter_dir, testing::GoldenPath("exl3_qwen3_tiny"),
                    {.model = {.kv_dtype = cpu::KvDtype::kF32, .context = 32}, .head = head});
  if (!drafter.ok()) return drafter.status();
  EXPECT_TRUE((*drafter)->head().columns() > 0);
  auto stream = (*drafter)->NewStream();
  if (!stream.ok()) return stream.status();
  std::vector<float> taps(5 * 2 * 128);
  for (size_t i = 0; i < taps.size(); ++i) taps[i] = static_cast<float>((i * 37) % 17) - 8.0f;
  absl::Status status = (*drafter)->AppendTaps(**stream, TapForm::kRaw, taps, 5);
  if (!status.ok()) return status;
  return (*drafter)->Propose(**stream, 1234, {.want_logits = true});
}

TEST(DrafterExl3HeadTest, TwoSpanLogitsEqualTheFullHeadsAtTheirColumns) {
  const std::string dir =
      twinspan::testing::WriteRandomDrafter("twinspan_drafter_exl3", false, 3, 128, 151936, {0, 1});
  auto full = ProposeWith(dir, "full");
  ASSERT_TRUE(full.ok()) << full.status();
  auto spans = ProposeWith(dir, "two-span");
  ASSERT_TRUE(spans.ok()) << spans.status();
  ASSERT_EQ(spans->columns, 98304 + 288);
  EXPECT_EQ(spans->column_ids[98304], 151936 - 288);
  const int64_t rows = static_cast<int64_t>(spans->ids.size());
  int64_t mismatches = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < spans->columns; ++c) {
      mismatches += spans->logits[r * spans->columns + c] !=
                    full->logits[r * full->columns + spans->column_ids[c]];
    }
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace twinspan::drafter
