// GPU tests of kernels/cuda/dynamic_conv: cpu::DynamicConv on random inputs, bit for bit (each
// output is the same sequence of separately rounded products and adds; the CPU twin built for
// x86-64 without -mfma does not contract them). Cases: the 27B drafter's block (8 rows, 5,120
// channels, 2 taps, groups of 16, both sides of the kernel projection's 1,280-wide rows), 1 and
// 16 rows, odd shapes; then argument errors.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "kernels/cpu/dynamic_conv.h"
#include "kernels/cuda/dynamic_conv.cuh"
#include "tests/cuda/gdn_testing.h"

namespace twinspan::cuda {
namespace {

using testing::DeviceArray;
using testing::ExpectBitEqual;

TEST(DynamicConvCudaTest, MatchesCpuBitForBit) {
  struct Case {
    int64_t rows, channels, taps, group_size;
    int64_t side;  // 0 or 1: which half of a [2 * taps * groups] kernel-projection row is used.
  };
  const Case cases[] = {{8, 5120, 2, 16, 0},  {8, 5120, 2, 16, 1}, {1, 5120, 2, 16, 1},
                        {16, 5120, 2, 16, 0}, {3, 12, 3, 4, 1},    {5, 7, 1, 7, 0},
                        {4, 30, 5, 3, 1},     {0, 16, 2, 16, 0}};
  testing::TestStream stream;
  for (const Case& c : cases) {
    const std::string what = absl::StrFormat("rows %d channels %d taps %d group %d side %d", c.rows,
                                             c.channels, c.taps, c.group_size, c.side);
    SCOPED_TRACE(what);
    const int64_t side_width = c.taps * (c.channels / c.group_size), stride = 2 * side_width;
    std::mt19937 rng(29 + static_cast<uint32_t>(c.rows * c.channels + c.side));
    const std::vector<float> x = testing::RandomNormal(c.rows * c.channels, 1.0f, rng);
    const std::vector<float> base = testing::RandomNormal(c.taps * c.channels, 0.7f, rng);
    const std::vector<float> projection = testing::RandomNormal(c.rows * stride + 1, 0.3f, rng);
    const cpu::DynamicConvParams params{.rows = c.rows,
                                        .channels = c.channels,
                                        .taps = c.taps,
                                        .group_size = c.group_size,
                                        .dynamic_row_stride = stride};
    const int64_t offset = c.side * side_width;
    const auto dynamic_of = [&](const float* data, size_t size) {
      return std::span<const float>(data, size).subspan(offset);
    };
    std::vector<float> out_cpu(x.size());
    ASSERT_TRUE(cpu::DynamicConv({}, out_cpu, x, base,
                                 dynamic_of(projection.data(), projection.size()), params)
                    .ok());
    DeviceArray<float> xd(x), bd(base), pd(projection), od(x.size());
    ASSERT_TRUE(DynamicConv(stream.ctx(), od.span(), xd.cspan(), bd.cspan(),
                            dynamic_of(pd.get(), pd.size()), params)
                    .ok());
    ASSERT_TRUE(stream.Finish());
    ExpectBitEqual(out_cpu, od.Download(), "DynamicConv, " + what);
  }
}

TEST(DynamicConvCudaTest, RejectsBadArguments) {
  const cpu::DynamicConvParams good{
      .rows = 2, .channels = 8, .taps = 2, .group_size = 4, .dynamic_row_stride = 4};
  DeviceArray<float> x(16), out(16), base(16), dynamic(8);
  testing::TestStream stream;
  const Context& ctx = stream.ctx();
  const auto run = [&](const cpu::DynamicConvParams& p, std::span<float> o,
                       std::span<const float> in, std::span<const float> b,
                       std::span<const float> d) {
    return DynamicConv(ctx, o, in, b, d, p).code();
  };
  constexpr auto kBad = absl::StatusCode::kInvalidArgument;
  ASSERT_EQ(run(good, out.span(), x.cspan(), base.cspan(), dynamic.cspan()), absl::StatusCode::kOk);
  cpu::DynamicConvParams p = good;
  p.group_size = 3;  // 8 % 3 != 0
  EXPECT_EQ(run(p, out.span(), x.cspan(), base.cspan(), dynamic.cspan()), kBad);
  p = good;
  p.taps = 0;
  EXPECT_EQ(run(p, out.span(), x.cspan(), base.cspan(), dynamic.cspan()), kBad);
  p = good;
  p.dynamic_row_stride = 3;  // Below taps x groups = 4.
  EXPECT_EQ(run(p, out.span(), x.cspan(), base.cspan(), dynamic.cspan()), kBad);
  p = good;
  p.rows = -1;
  EXPECT_EQ(run(p, out.span(), x.cspan(), base.cspan(), dynamic.cspan()), kBad);
  EXPECT_EQ(run(good, out.span().first(15), x.cspan(), base.cspan(), dynamic.cspan()), kBad);
  EXPECT_EQ(run(good, out.span(), x.cspan().first(15), base.cspan(), dynamic.cspan()), kBad);
  EXPECT_EQ(run(good, out.span(), x.cspan(), base.cspan().first(15), dynamic.cspan()), kBad);
  EXPECT_EQ(run(good, out.span(), x.cspan(), base.cspan(), dynamic.cspan().first(7)), kBad);
  // out overlapping x.
  EXPECT_EQ(run(good, x.span(), x.cspan(), base.cspan(), dynamic.cspan()), kBad);
  EXPECT_EQ(run(good, {}, x.cspan(), base.cspan(), dynamic.cspan()), kBad);
  ASSERT_TRUE(stream.Finish());
}

}  // namespace
}  // namespace twinspan::cuda
