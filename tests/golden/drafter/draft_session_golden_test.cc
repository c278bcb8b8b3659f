// DraftSession on golden/dflash_drafter_tiny (z-lab/dflash DFlashDraftModel, golden/README.md
// section 7): opening with part of the prompt and committing the rest drafts exactly what one
// append of the whole prompt drafts, and fused taps equal raw taps.
#include <memory>
#include <vector>

#include "common/safetensors/checkpoint.h"
#include "gtest/gtest.h"
#include "services/drafter/draft_session.h"
#include "tests/golden/drafter/golden_tensors.h"
#include "tests/testing/golden.h"

namespace twinspan::drafter {
namespace {

using ::twinspan::testing::ExpectRelFro;
using ::twinspan::testing::Floats;
using ::twinspan::testing::GoldenPath;
using ::twinspan::testing::Ints;

constexpr int32_t kAnchor = 3619;  // The target's argmax after the prompt.

class DraftSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto drafter =
        Drafter::Open(GoldenPath("dflash_drafter_tiny/model"), GoldenPath("hf_qwen3_tiny/model"),
                      {.model = {.kv_dtype = cpu::KvDtype::kF32, .context = 64}, .head = "full"});
    ASSERT_TRUE(drafter.ok()) << drafter.status();
    drafter_ = std::move(*drafter);
    auto reference = Checkpoint::Open(GoldenPath("dflash_drafter_tiny/reference.safetensors"));
    ASSERT_TRUE(reference.ok());
    reference_ = std::move(*reference);
    taps_ = Floats(*reference_, "target_hidden");
    for (int64_t id : Ints(*reference_, "prompt_ids")) prompt_.push_back(static_cast<int32_t>(id));
  }

  std::span<const float> TapRows(int64_t first, int64_t count) const {
    return std::span<const float>(taps_).subspan(first * 512, count * 512);
  }

  std::unique_ptr<Drafter> drafter_;
  std::unique_ptr<Checkpoint> reference_;
  std::vector<float> taps_;
  std::vector<int32_t> prompt_;
};

TEST_F(DraftSessionTest, OpenThenCommitDraftsWhatOneAppendDrafts) {
  auto whole = DraftSession::Create(*drafter_);
  ASSERT_TRUE(whole.ok());
  auto once = (*whole)->Open(TapForm::kRaw, taps_, 24, kAnchor, {.want_logits = true});
  ASSERT_TRUE(once.ok()) << once.status();

  auto split = DraftSession::Create(*drafter_);
  ASSERT_TRUE(split.ok());
  // A round that drafted after prompt[20] and got prompt[21..23] accepted, then the anchor.
  ASSERT_TRUE((*split)->Open(TapForm::kRaw, TapRows(0, 20), 20, prompt_[20]).ok());
  auto committed = (*split)->Commit(std::span<const int32_t>(prompt_).subspan(20, 4), TapForm::kRaw,
                                    TapRows(20, 4), kAnchor, {.want_logits = true});
  ASSERT_TRUE(committed.ok()) << committed.status();
  EXPECT_EQ((*split)->context_length(), 24);
  EXPECT_EQ(committed->ids, once->ids);
  EXPECT_EQ(committed->logits, once->logits);  // Row-invariant: bit for bit.
  ExpectRelFro(committed->logits, Floats(*reference_, "draft_logits"), 1e-4, "draft_logits");
}

TEST_F(DraftSessionTest, FusedTapsEqualRawTaps) {
  std::vector<float> fused(24 * 256);
  ASSERT_TRUE(drafter_->model().FuseTaps(taps_.data(), 24, fused.data()).ok());
  auto raw_session = DraftSession::Create(*drafter_);
  auto fused_session = DraftSession::Create(*drafter_);
  ASSERT_TRUE(raw_session.ok() && fused_session.ok());
  auto raw = (*raw_session)->Open(TapForm::kRaw, taps_, 24, kAnchor, {.want_logits = true});
  auto from_fused =
      (*fused_session)->Open(TapForm::kFused, fused, 24, kAnchor, {.want_logits = true});
  ASSERT_TRUE(raw.ok() && from_fused.ok());
  EXPECT_EQ(from_fused->logits, raw->logits);
  // The reference's fused rows give the same drafts within its tolerance.
  auto ref_session = DraftSession::Create(*drafter_);
  ASSERT_TRUE(ref_session.ok());
  auto from_reference = (*ref_session)
                            ->Open(TapForm::kFused, Floats(*reference_, "context_fc_hidden_norm"),
                                   24, kAnchor, {.want_logits = true});
  ASSERT_TRUE(from_reference.ok());
  ExpectRelFro(from_reference->logits, raw->logits, 1e-4, "reference fused");
}

TEST_F(DraftSessionTest, RejectsMisuse) {
  auto session = DraftSession::Create(*drafter_);
  ASSERT_TRUE(session.ok());
  const std::vector<int32_t> ids = {prompt_[0]};
  EXPECT_EQ((*session)->Commit(ids, TapForm::kRaw, TapRows(0, 1), kAnchor).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*session)->Open(TapForm::kRaw, TapRows(0, 3), 2, kAnchor).status().code(),
            absl::StatusCode::kInvalidArgument);  // 3 rows of taps for 2 rows.
  auto fresh = DraftSession::Create(*drafter_);
  ASSERT_TRUE((*fresh)->Open(TapForm::kRaw, TapRows(0, 4), 4, prompt_[4]).ok());
  const std::vector<int32_t> wrong = {prompt_[5]};
  EXPECT_EQ((*fresh)->Commit(wrong, TapForm::kRaw, TapRows(4, 1), kAnchor).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*fresh)->Open(TapForm::kRaw, TapRows(0, 1), 1, kAnchor).status().code(),
            absl::StatusCode::kFailedPrecondition);
  const std::vector<int32_t> right = {prompt_[4]};
  EXPECT_EQ((*fresh)->Commit(right, TapForm::kRaw, TapRows(4, 1), 4096).status().code(),
            absl::StatusCode::kInvalidArgument);  // Pending outside the vocabulary.
  EXPECT_EQ((*fresh)->context_length(), 4);       // ... and nothing was appended.
  EXPECT_TRUE((*fresh)->Commit(right, TapForm::kRaw, TapRows(4, 1), kAnchor).ok());
}

}  // namespace
}  // namespace twinspan::drafter
