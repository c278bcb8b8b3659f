// cpu::Exl3SpanLinear: the packed span logits equal the whole head's logits at the same columns
// bit for bit (each view plans as the head), for the drafter's two spans and a 384-column tail.
#include <cstring>
#include <vector>

#include "common/exl3/span_view.h"
#include "common/exl3/weight.h"
#include "gtest/gtest.h"
#include "kernels/cpu/exl3_linear.h"
#include "kernels/cpu/exl3_span_linear.h"
#include "tests/unit/formats_exl3_fixture.h"

namespace twinspan::cpu {
namespace {

class Exl3SpanLinearTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::SyntheticLinear spec;
    spec.prefix = "lm_head";
    spec.k = 256;
    spec.n = 66 * 128;  // Wide enough to plan (1, 8), as the 27B's head does.
    spec.bits = 4;
    spec.seed = 21;
    checkpoint_ = testing::OpenTensors("span_linear.safetensors", testing::SyntheticTensors(spec));
    ASSERT_NE(checkpoint_, nullptr);
    auto w = exl3::Weight::Load(*checkpoint_, spec.prefix);
    ASSERT_TRUE(w.ok()) << w.status();
    head_ = *w;
  }
  std::unique_ptr<Checkpoint> checkpoint_;
  exl3::Weight head_;
};

TEST_F(Exl3SpanLinearTest, PackedLogitsAreTheHeadsColumnsBitForBit) {
  const std::vector<exl3::ColumnSpan> spans = {{10, 2000}, {8400, 8448}};
  auto views = exl3::MakeSpanViews(head_, spans);
  ASSERT_TRUE(views.ok()) << views.status();
  auto tail = head_.columns(63 * 128, 3 * 128);  // A 384-column tail planned as the head.
  ASSERT_TRUE(tail.ok());
  const std::vector<exl3::SpanView> tail384 = {(*views)[0], {*tail, {8400, 8448}}};
  constexpr int64_t kRows = 3;
  const std::vector<float> x = testing::RandomRows(kRows, head_.k(), 5);
  std::vector<float> full(kRows * head_.n());
  ASSERT_TRUE(Exl3Linear(x.data(), head_.k(), kRows, head_, full.data(), head_.n(), 2).ok());
  const std::vector<exl3::SpanView>* cases[] = {&*views, &tail384};
  for (const std::vector<exl3::SpanView>* v : cases) {
    const int64_t size = exl3::PackedSize(*v), stride = size + 1;
    std::vector<float> packed(kRows * stride, -1.f);
    ASSERT_TRUE(Exl3SpanLinear(x.data(), head_.k(), kRows, *v, packed.data(), stride, 2).ok());
    for (int64_t r = 0; r < kRows; ++r) {
      EXPECT_EQ(std::memcmp(packed.data() + r * stride, full.data() + r * head_.n() + 10,
                            1990 * sizeof(float)),
                0);
      EXPECT_EQ(std::memcmp(packed.data() + r * stride + 1990, full.data() + r * head_.n() + 8400,
                            48 * sizeof(float)),
                0);
      EXPECT_EQ(packed[r * stride + size], -1.f);  // The stride's padding is left alone.
    }
  }
}

TEST_F(Exl3SpanLinearTest, RefusesAPackedRowTooShortOrBadRows) {
  auto views = exl3::MakeSpanViews(head_, std::vector<exl3::ColumnSpan>{{0, 100}});
  ASSERT_TRUE(views.ok());
  const std::vector<float> x = testing::RandomRows(1, head_.k(), 6);
  std::vector<float> packed(100);
  EXPECT_EQ(Exl3SpanLinear(x.data(), head_.k(), 1, *views, packed.data(), 99).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Exl3SpanLinear(x.data(), head_.k(), -1, *views, packed.data(), 100).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Exl3SpanLinear(x.data(), head_.k() - 1, 1, *views, packed.data(), 100).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Exl3SpanLinear(x.data(), head_.k(), 1, *views, packed.data(), 100).ok());
}

}  // namespace
}  // namespace twinspan::cpu
