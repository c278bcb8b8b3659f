// EXL3 weights and column views: views keep the parent's strides, slices and plan; span logits
// equal the full head's logits bit for bit; the CPU linear is row- and thread-invariant.
#include <cstring>
#include <vector>

#include "common/exl3/span_view.h"
#include "common/exl3/weight.h"
#include "gtest/gtest.h"
#include "kernels/cpu/exl3_linear.h"
#include "tests/unit/formats_exl3_fixture.h"

namespace twinspan::exl3 {
namespace {

using testing::OpenTensors;
using testing::RandomRows;
using testing::SyntheticLinear;
using testing::SyntheticTensors;

TEST(Exl3WeightTest, LoadsShapeBitsCodebookAndBias) {
  SyntheticLinear spec{
      .prefix = "m.proj", .k = 256, .n = 384, .bits = 5, .codebook = Codebook::kMcg, .bias = true};
  auto ckpt = OpenTensors("exl3_load.safetensors", SyntheticTensors(spec));
  ASSERT_NE(ckpt, nullptr);
  EXPECT_TRUE(Weight::IsStored(*ckpt, "m.proj"));
  EXPECT_FALSE(Weight::IsStored(*ckpt, "m.other"));
  absl::StatusOr<Weight> w = Weight::Load(*ckpt, "m.proj");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->k(), 256);
  EXPECT_EQ(w->n(), 384);
  EXPECT_EQ(w->bits(), 5);
  EXPECT_EQ(w->codebook(), Codebook::kMcg);
  EXPECT_TRUE(w->has_bias());
  EXPECT_EQ(w->suh().size(), 256u);
  EXPECT_EQ(w->svh().size(), 384u);
  EXPECT_EQ(w->plan(), plan(256, 384));
  EXPECT_EQ(Weight::Load(*ckpt, "m.other").status().code(), absl::StatusCode::kNotFound);
}

TEST(Exl3WeightTest, ColumnViewKeepsParentStridesAndStartsAtItsFirstBlock) {
  SyntheticLinear spec{.k = 1024, .n = 80 * 128, .bits = 1, .bias = true};  // Wide: (1, 8).
  auto ckpt = OpenTensors("exl3_view.safetensors", SyntheticTensors(spec));
  ASSERT_NE(ckpt, nullptr);
  absl::StatusOr<Weight> parent = Weight::Load(*ckpt, "lin");
  ASSERT_TRUE(parent.ok()) << parent.status();
  absl::StatusOr<Weight> view = parent->columns(384, 256);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->k(), 1024);
  EXPECT_EQ(view->n(), 256);
  EXPECT_EQ(view->first_column(), 384);
  EXPECT_EQ(view->stored_n(), 80 * 128);
  EXPECT_EQ(view->tile_row_stride(), parent->tile_row_stride());
  for (int64_t tk : {0, 1, 63}) {
    for (int64_t tn : {0, 7, 15}) EXPECT_EQ(view->tile(tk, tn), parent->tile(tk, tn + 384 / 16));
  }
  EXPECT_EQ(view->suh().data(), parent->suh().data());
  EXPECT_EQ(view->svh().data(), parent->svh().data() + 384);
  EXPECT_EQ(view->bias().data(), parent->bias().data() + 384);
  // The view keeps the stored matrix's plan though 2 blocks alone would plan a K split.
  EXPECT_EQ(view->plan(), parent->plan());
  EXPECT_NE(plan(1024, 256), parent->plan());
  // A view of a view is still relative to its parent.
  absl::StatusOr<Weight> inner = view->columns(128, 128);
  ASSERT_TRUE(inner.ok());
  EXPECT_EQ(inner->first_column(), 512);
  EXPECT_EQ(inner->tile(2, 0), parent->tile(2, 512 / 16));
}

TEST(Exl3WeightTest, ColumnViewRefusesPartialBlocks) {
  auto ckpt = OpenTensors("exl3_view_bad.safetensors", SyntheticTensors({}));
  ASSERT_NE(ckpt, nullptr);
  absl::StatusOr<Weight> w = Weight::Load(*ckpt, "lin");
  ASSERT_TRUE(w.ok());
  for (auto [from, n] : {std::pair<int64_t, int64_t>{64, 128},
                         {0, 100},
                         {0, 0},
                         {256, 256},
                         {-128, 128},
                         {384, 128}}) {
    absl::StatusOr<Weight> view = w->columns(from, n);
    EXPECT_EQ(view.status().code(), absl::StatusCode::kInvalidArgument) << from << " " << n;
    EXPECT_NE(view.status().message().find("\"lin\""), std::string::npos);
  }
}

std::vector<float> Forward(const Weight& w, const std::vector<float>& x, int64_t rows,
                           int threads) {
  std::vector<float> y(static_cast<size_t>(rows * w.n()));
  const absl::Status status = cpu::Exl3Linear(x.data(), w.k(), rows, w, y.data(), w.n(), threads);
  EXPECT_TRUE(status.ok()) << status;
  return y;
}

TEST(Exl3WeightTest, SpanLogitsEqualFullHeadLogitsBitForBit) {
  // 80 blocks: a wide head (one split); spans narrower than kWideBlocks get widened views.
  SyntheticLinear spec{
      .prefix = "lm_head", .k = 1024, .n = 80 * 128, .bits = 1, .codebook = Codebook::k3Inst};
  auto ckpt = OpenTensors("exl3_head.safetensors", SyntheticTensors(spec));
  ASSERT_NE(ckpt, nullptr);
  absl::StatusOr<Weight> head = Weight::Load(*ckpt, "lm_head");
  ASSERT_TRUE(head.ok());
  const std::vector<ColumnSpan> spans = {{0, 1000}, {80 * 128 - 200, 80 * 128}};
  absl::StatusOr<std::vector<SpanView>> views = MakeSpanViews(*head, spans);
  ASSERT_TRUE(views.ok()) << views.status();
  ASSERT_EQ(views->size(), 2u);
  EXPECT_EQ((*views)[1].weight.n(), kWideBlocks * 128);
  EXPECT_EQ((*views)[1].drop_front(), (kWideBlocks * 128) - 200);

  const int64_t rows = 3;
  const std::vector<float> x = RandomRows(rows, 1024, 7);
  const std::vector<float> full = Forward(*head, x, rows, 2);
  std::vector<std::vector<float>> outputs;
  std::vector<const float*> pointers;
  for (const SpanView& view : *views) outputs.push_back(Forward(view.weight, x, rows, 1));
  for (const auto& out : outputs) pointers.push_back(out.data());
  std::vector<float> packed(rows * PackedSize(*views));
  ASSERT_TRUE(PackSpanLogits(*views, pointers, rows, packed.data(), PackedSize(*views)).ok());
  for (int64_t r = 0; r < rows; ++r) {
    int64_t p = 0;
    for (const ColumnSpan& span : spans) {
      for (int64_t c = span.begin; c < span.end; ++c, ++p) {
        ASSERT_EQ(std::memcmp(&packed[r * PackedSize(*views) + p], &full[r * head->n() + c], 4), 0)
            << "row " << r << " column " << c;
      }
    }
  }
}

TEST(Exl3WeightTest, NarrowViewForwardEqualsParentColumns) {
  // The parent is wide (one split, 8 warps); 2 blocks alone would plan (2, 4). The view inherits
  // the parent's plan, so its columns match bit for bit.
  SyntheticLinear spec{.k = 1024, .n = 80 * 128, .bits = 1, .bias = true, .seed = 9};
  auto ckpt = OpenTensors("exl3_narrow.safetensors", SyntheticTensors(spec));
  ASSERT_NE(ckpt, nullptr);
  absl::StatusOr<Weight> w = Weight::Load(*ckpt, "lin");
  ASSERT_TRUE(w.ok());
  ASSERT_NE(plan(1024, 256), w->plan());
  absl::StatusOr<Weight> view = w->columns(1024, 256);
  ASSERT_TRUE(view.ok());
  const std::vector<float> x = RandomRows(2, 1024, 3);
  const std::vector<float> full = Forward(*w, x, 2, 2);
  const std::vector<float> part = Forward(*view, x, 2, 1);
  for (int64_t r = 0; r < 2; ++r) {
    EXPECT_EQ(std::memcmp(&part[r * 256], &full[r * w->n() + 1024], 256 * sizeof(float)), 0);
  }
}

TEST(Exl3LinearTest, RowAndThreadInvariantFor1To64Rows) {
  SyntheticLinear spec{.k = 512, .n = 640, .bits = 4, .bias = true, .seed = 4};
  auto ckpt = OpenTensors("exl3_rows.safetensors", SyntheticTensors(spec));
  ASSERT_NE(ckpt, nullptr);
  absl::StatusOr<Weight> w = Weight::Load(*ckpt, "lin");
  ASSERT_TRUE(w.ok());
  const std::vector<float> x = RandomRows(64, 512, 11);
  const std::vector<float> all = Forward(*w, x, 64, 1);
  for (int64_t rows : {1, 2, 3, 8, 17, 33, 64}) {
    for (int threads : {1, 2, 5}) {
      const std::vector<float> y = Forward(*w, x, rows, threads);
      EXPECT_EQ(std::memcmp(y.data(), all.data(), y.size() * sizeof(float)), 0)
          << rows << " rows, " << threads << " threads";
    }
  }
  // A row placed last in a batch gives the same bits as first in another.
  std::vector<float> shifted(x.begin() + 512 * 40, x.begin() + 512 * 41);
  const std::vector<float> alone = Forward(*w, shifted, 1, 3);
  EXPECT_EQ(std::memcmp(alone.data(), &all[40 * 640], 640 * sizeof(float)), 0);
}

TEST(Exl3LinearTest, RefusesBadArguments) {
  auto ckpt = OpenTensors("exl3_args.safetensors", SyntheticTensors({}));
  ASSERT_NE(ckpt, nullptr);
  absl::StatusOr<Weight> w = Weight::Load(*ckpt, "lin");
  ASSERT_TRUE(w.ok());
  std::vector<float> x(256), y(384);
  EXPECT_FALSE(cpu::Exl3Linear(x.data(), 100, 1, *w, y.data(), 384).ok());
  EXPECT_FALSE(cpu::Exl3Linear(x.data(), 256, 1, *w, y.data(), 383).ok());
  EXPECT_FALSE(cpu::Exl3Linear(nullptr, 256, 1, *w, y.data(), 384).ok());
  EXPECT_FALSE(cpu::Exl3Linear(x.data(), 256, -1, *w, y.data(), 384).ok());
  EXPECT_FALSE(cpu::Exl3Linear(x.data(), 256, 1, *w, y.data(), 384, 0).ok());
  EXPECT_FALSE(cpu::Exl3Linear(x.data(), 256, 1, Weight(), y.data(), 384).ok());
  EXPECT_TRUE(cpu::Exl3Linear(nullptr, 256, 0, *w, nullptr, 384).ok());
}

}  // namespace
}  // namespace twinspan::exl3
