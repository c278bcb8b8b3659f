// The span-head ops of backend.h on the CPU backend: SpanLinear (the packed span logits, bit-equal
// to the full head's columns and to cpu::Exl3SpanLinear), UploadSpanHead's refusals, and SpanIds
// (packed columns back to vocabulary ids) with its bad input.
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "common/exl3/span_view.h"
#include "common/exl3/weight.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/exl3_span_linear.h"
#include "kernels/cpu/span_ids.h"
#include "tests/unit/formats_exl3_fixture.h"

namespace twinspan::cpu {
namespace {

std::unique_ptr<backend::Buffer> Put(backend::Backend& b, const void* data, size_t bytes) {
  auto buffer = b.Allocate(bytes);
  EXPECT_TRUE(buffer.ok());
  EXPECT_TRUE(b.Upload(**buffer, 0, data, bytes).ok());
  return *std::move(buffer);
}

class CpuBackendSpanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    head_ = Load("lm_head", 21, &checkpoint_);
    other_ = Load("other_head", 22, &other_checkpoint_);
  }
  static exl3::Weight Load(const char* prefix, uint32_t seed, std::unique_ptr<Checkpoint>* ckpt) {
    testing::SyntheticLinear spec;
    spec.prefix = prefix;
    spec.k = 256;
    spec.n = int64_t{66} * 128;  // Plans (1, 8), as the 27B's head does.
    spec.bits = 4;
    spec.seed = seed;
    *ckpt =
        testing::OpenTensors(std::string(prefix) + ".safetensors", testing::SyntheticTensors(spec));
    EXPECT_NE(*ckpt, nullptr);
    auto w = exl3::Weight::Load(**ckpt, prefix);
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? *w : exl3::Weight();
  }
  std::unique_ptr<Checkpoint> checkpoint_, other_checkpoint_;
  exl3::Weight head_, other_;
};

TEST_F(CpuBackendSpanTest, SpanLinearIsTheFullHeadsColumnsOnAPool) {
  ThreadPool pool(3);
  const std::unique_ptr<backend::Backend> b = NewCpuBackend(&pool);
  // Three spans, the last one a single column: views overlap once widened to 64 blocks.
  const std::vector<exl3::ColumnSpan> spans = {{10, 2000}, {5000, 5001}, {8400, 8448}};
  auto views = exl3::MakeSpanViews(head_, spans);
  ASSERT_TRUE(views.ok()) << views.status();
  auto head = b->UploadSpanHead(*views);
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ((*head)->columns(), 1990 + 1 + 48);
  EXPECT_EQ((*head)->in_features(), 256);
  auto full = b->UploadLinear(LinearWeight::Exl3(head_));
  ASSERT_TRUE(full.ok());
  constexpr int64_t kRows = 5;
  const int64_t stride = (*head)->columns() + 3;
  const std::vector<float> x = testing::RandomRows(kRows, head_.k(), 5);
  auto dx = Put(*b, x.data(), x.size() * sizeof(float));
  auto dfull = b->AllocateFloats(kRows * head_.n());
  std::vector<float> poison(kRows * stride, -7.0f);
  auto dpacked = Put(*b, poison.data(), poison.size() * sizeof(float));
  ASSERT_TRUE(dfull.ok());
  ASSERT_TRUE(b->Linear(dx->floats(), 256, kRows, **full, (*dfull)->floats(), head_.n()).ok());
  ASSERT_TRUE(b->SpanLinear(dx->floats(), 256, kRows, **head, dpacked->floats(), stride).ok());
  std::vector<float> want(kRows * stride, -7.0f);
  ASSERT_TRUE(Exl3SpanLinear(x.data(), 256, kRows, *views, want.data(), stride, 1).ok());
  EXPECT_EQ(std::memcmp(dpacked->floats(), want.data(), want.size() * sizeof(float)), 0);
  int64_t mismatches = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    int64_t c = 0;
    for (const exl3::ColumnSpan& s : spans) {
      for (int64_t j = s.begin; j < s.end; ++j, ++c) {
        const float a = dpacked->floats()[r * stride + c], f = (*dfull)->floats()[r * 66 * 128 + j];
        mismatches += std::bit_cast<uint32_t>(a) != std::bit_cast<uint32_t>(f);
      }
    }
    EXPECT_EQ(dpacked->floats()[r * stride + c], -7.0f);  // The stride's padding is untouched.
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_F(CpuBackendSpanTest, UploadSpanHeadAndSpanLinearRefuseBadArguments) {
  const std::unique_ptr<backend::Backend> b = NewCpuBackend(nullptr);
  EXPECT_EQ(b->UploadSpanHead({}).status().code(), absl::StatusCode::kInvalidArgument);
  auto a = exl3::MakeSpanViews(head_, std::vector<exl3::ColumnSpan>{{0, 100}});
  auto o = exl3::MakeSpanViews(other_, std::vector<exl3::ColumnSpan>{{200, 300}});
  ASSERT_TRUE(a.ok() && o.ok());
  const std::vector<exl3::SpanView> mixed = {(*a)[0], (*o)[0]};
  const absl::Status s = b->UploadSpanHead(mixed).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("view 1"), std::string::npos) << s;
  auto head = b->UploadSpanHead(*a);
  ASSERT_TRUE(head.ok());
  auto x = b->AllocateFloats(256);
  auto packed = b->AllocateFloats(100);
  ASSERT_TRUE(x.ok() && packed.ok());
  EXPECT_EQ(b->SpanLinear((*x)->floats(), 256, 1, **head, (*packed)->floats(), 99).code(),
            absl::StatusCode::kInvalidArgument);  // Stride below the packed row.
  EXPECT_EQ(b->SpanLinear((*x)->floats(), 256, -1, **head, (*packed)->floats(), 100).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b->SpanLinear((*x)->floats(), 256, 2, **head, (*packed)->floats(), 100).code(),
            absl::StatusCode::kInvalidArgument);  // Two rows leave both buffers.
  std::vector<float> host(256);
  EXPECT_EQ(b->SpanLinear(host.data(), 256, 1, **head, (*packed)->floats(), 100).code(),
            absl::StatusCode::kInvalidArgument);  // Not this backend's memory.
  const std::unique_ptr<backend::Backend> other = NewCpuBackend(nullptr);
  auto foreign = other->UploadSpanHead(*a);
  ASSERT_TRUE(foreign.ok());
  EXPECT_EQ(b->SpanLinear((*x)->floats(), 256, 1, **foreign, (*packed)->floats(), 100).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(b->SpanLinear((*x)->floats(), 256, 1, **head, (*packed)->floats(), 100).ok());
}

TEST(SpanIdsTest, MapsPackedColumnsToVocabularyIds) {
  const std::vector<exl3::ColumnSpan> spans = {{0, 5}, {100, 102}, {4093, 4096}};
  const std::vector<int32_t> columns = {0, 4, 5, 6, 7, 9, -1, 3};
  std::vector<int32_t> ids(columns.size(), 77);
  ASSERT_TRUE(SpanIds({}, spans, columns, ids).ok());
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 4, 100, 101, 4093, 4095, -1, 3}));
  // In place, on the backend.
  const std::unique_ptr<backend::Backend> b = NewCpuBackend(nullptr);
  auto d = Put(*b, columns.data(), columns.size() * sizeof(int32_t));
  int32_t* p = static_cast<int32_t*>(d->data());
  ASSERT_TRUE(b->SpanIds(spans, p, static_cast<int64_t>(columns.size()), p).ok());
  EXPECT_EQ(std::vector<int32_t>(p, p + columns.size()), ids);
}

TEST(SpanIdsTest, RefusesBadSpansSizesAndColumns) {
  const std::vector<exl3::ColumnSpan> spans = {{0, 5}, {100, 102}};
  std::vector<int32_t> ids(2);
  const auto code = [&](std::vector<exl3::ColumnSpan> s, std::vector<int32_t> c) {
    ids.resize(c.size());
    return SpanIds({}, s, c, ids).code();
  };
  EXPECT_EQ(code(spans, {7}), absl::StatusCode::kInvalidArgument);   // Past the 7 columns.
  EXPECT_EQ(code(spans, {-2}), absl::StatusCode::kInvalidArgument);  // Below -1.
  EXPECT_EQ(code({}, {0}), absl::StatusCode::kInvalidArgument);      // No spans.
  EXPECT_EQ(code({{3, 3}}, {0}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{-1, 3}}, {0}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(std::vector<exl3::ColumnSpan>(kMaxSpanIdsSpans + 1, {0, 1}), {0}),
            absl::StatusCode::kInvalidArgument);
  std::vector<int32_t> one(1), two(2);
  EXPECT_EQ(SpanIds({}, spans, one, two).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(SpanIds({}, spans, std::vector<int32_t>{6}, one).ok());
  EXPECT_EQ(one[0], 101);
  const std::unique_ptr<backend::Backend> b = NewCpuBackend(nullptr);
  EXPECT_EQ(b->SpanIds(spans, one.data(), 1, one.data()).code(),
            absl::StatusCode::kInvalidArgument);  // Host memory, not the backend's.
  EXPECT_EQ(b->SpanIds(spans, nullptr, -1, nullptr).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinspan::cpu
