// The drafter's prompt-prefix cache through the engine's DraftModel (the demo pair's drafter,
// random tap rows): a stream that resumes a cached prompt prefix and gets taps only for the rows
// after it drafts what a stream given every row drafts, now and after a commit; a stream whose
// prefix the cache does not hold is refused (FailedPrecondition), and bad tap ranges are refused.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "services/drafter/server/drafter_adapter.h"

namespace twinspan::serving {
namespace {

class DrafterPrefixCacheTest : public ::testing::Test {
 protected:
  static std::unique_ptr<engine::DraftModel> Open(int64_t cache_bytes) {
    DrafterAdapterOptions o;
    o.drafter_dir = std::string(TWINSPAN_DEMO_DIR) + "/drafter";
    o.target_dir = std::string(TWINSPAN_DEMO_DIR) + "/target";
    o.context = 512;
    o.prefix_cache_bytes = cache_bytes;
    o.prefix_block_tokens = 64;
    auto model = OpenDrafterAdapter(o);
    EXPECT_TRUE(model.ok()) << model.status();
    return model.ok() ? std::move(*model) : nullptr;
  }

  void SetUp() override {
    cached_ = Open(64 << 20);
    fresh_ = Open(0);
    ASSERT_NE(cached_, nullptr);
    ASSERT_NE(fresh_, nullptr);
    width_ = cached_->info().tap_width;
    std::mt19937 rng(5);
    std::normal_distribution<float> normal;
    std::uniform_int_distribution<uint32_t> id(0, cached_->info().vocab_size - 1);
    for (int i = 0; i < 150; ++i) prompt_.push_back(id(rng));
    taps_.resize(200 * width_);
    for (float& x : taps_) x = normal(rng);
  }

  // Tap rows [first, first + rows) of the random rows.
  engine::TapRows Rows(int64_t first, int64_t rows) const {
    return engine::TapRows{rows, width_,
                           absl::MakeConstSpan(taps_).subspan(first * width_, rows * width_), false,
                           first};
  }

  std::unique_ptr<engine::DraftModel> cached_, fresh_;
  int64_t width_ = 0;
  std::vector<uint32_t> prompt_;
  std::vector<float> taps_;
};

TEST_F(DrafterPrefixCacheTest, AResumedStreamDraftsWhatAFreshOneDrafts) {
  auto reference = fresh_->NewSession();
  ASSERT_TRUE(reference.ok());
  auto want = (*reference)->Open(prompt_, Rows(0, 150), 7);
  ASSERT_TRUE(want.ok()) << want.status();

  auto first = cached_->NewSession();
  ASSERT_TRUE(first.ok());
  auto got_first = (*first)->Open(prompt_, Rows(0, 150), 7);  // a miss: stores 2 blocks
  ASSERT_TRUE(got_first.ok()) << got_first.status();
  EXPECT_EQ(*got_first, *want);
  EXPECT_EQ((*first)->resumed_rows(), 0);
  EXPECT_EQ(cached_->prefix_cache_use().blocks, 2);
  EXPECT_GT(cached_->prefix_cache_use().bytes, 0u);

  auto resumed = cached_->NewSession();
  ASSERT_TRUE(resumed.ok());
  auto got = (*resumed)->Open(prompt_, Rows(128, 22), 7);  // the target resumed 128 rows
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*resumed)->resumed_rows(), 128);
  EXPECT_EQ(*got, *want);
  // Rows the drafter holds beyond the target's resumed ones are skipped, not appended twice.
  auto more = cached_->NewSession();
  ASSERT_TRUE(more.ok());
  auto got_more = (*more)->Open(prompt_, Rows(64, 86), 7);
  ASSERT_TRUE(got_more.ok()) << got_more.status();
  EXPECT_EQ(*got_more, *want);
  // A commit after it drafts alike too.
  const std::vector<uint32_t> ids = {7, 11, 12};
  auto next_want = (*reference)->Commit(ids, Rows(150, 3), 13);
  auto next_got = (*resumed)->Commit(ids, Rows(150, 3), 13);
  ASSERT_TRUE(next_want.ok() && next_got.ok());
  EXPECT_EQ(*next_got, *next_want);
}

TEST_F(DrafterPrefixCacheTest, ARowTheCacheLacksIsRefusedAndTapRangesAreChecked) {
  auto session = cached_->NewSession();
  ASSERT_TRUE(session.ok());
  auto missing = (*session)->Open(prompt_, Rows(64, 86), 7);  // nothing cached yet
  EXPECT_TRUE(absl::IsFailedPrecondition(missing.status())) << missing.status();
  EXPECT_NE(missing.status().message().find("resumed 64 prompt rows"), std::string::npos);
  auto uncached = fresh_->NewSession();
  ASSERT_TRUE(uncached.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition((*uncached)->Open(prompt_, Rows(64, 86), 7).status()));
  auto bad = fresh_->NewSession();
  ASSERT_TRUE(bad.ok());
  EXPECT_TRUE(absl::IsInvalidArgument((*bad)->Open(prompt_, Rows(0, 149), 7).status()));
}

}  // namespace
}  // namespace twinspan::serving
