// GPU tests of kernels/cuda/gated_rms_norm: cpu::GatedRmsNorm on random inputs (the 27B's 48 heads
// of 128 at 1 and 16 rows, odd groups and widths), in place (y == x), and argument errors.
// Tolerance: only the order of the sum of squares (32 lane sums and a butterfly) and expf differ
// from the CPU op: rel_fro <= 4e-6 and every element within 4e-6 x (rms + |ref|).
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "kernels/cpu/gated_rms_norm.h"
#include "kernels/cuda/gated_rms_norm.cuh"
#include "tests/cuda/gdn_testing.h"

namespace twinspan::cuda {
namespace {

using testing::DeviceArray;
using testing::ExpectClose;

constexpr testing::Tolerance kTolerance{4e-6, 4e-6};

TEST(GatedRmsNormCudaTest, MatchesCpuInAndOutOfPlace) {
  struct Case {
    int64_t groups, dim;
  };
  const Case cases[] = {{48, 128}, {48 * 16, 128}, {7, 33}, {3, 1000}, {1, 1}, {0, 128}, {9, 64}};
  testing::TestStream stream;
  for (const Case& c : cases) {
    for (const bool in_place : {false, true}) {
      const std::string what =
          absl::StrFormat("groups %d dim %d%s", c.groups, c.dim, in_place ? " in place" : "");
      SCOPED_TRACE(what);
      std::mt19937 rng(17 + static_cast<uint32_t>(c.groups * c.dim));
      const std::vector<float> x = testing::RandomNormal(c.groups * c.dim, 2.0f, rng);
      const std::vector<float> gate = testing::RandomNormal(c.groups * c.dim, 2.0f, rng);
      const std::vector<float> weight = testing::RandomNormal(c.dim, 0.3f, rng);
      const float eps = 1e-6f;
      std::vector<float> y_cpu(x.size());
      ASSERT_TRUE(cpu::GatedRmsNorm({}, x.data(), gate.data(), c.groups, c.dim, weight.data(), eps,
                                    y_cpu.data())
                      .ok());
      DeviceArray<float> xd(x), gd(gate), wd(weight), yd(x.size());
      float* y = in_place ? xd.get() : yd.get();
      ASSERT_TRUE(
          GatedRmsNorm(stream.ctx(), xd.get(), gd.get(), c.groups, c.dim, wd.get(), eps, y).ok());
      ASSERT_TRUE(stream.Finish());
      ExpectClose(y_cpu, in_place ? xd.Download() : yd.Download(), kTolerance,
                  "GatedRmsNorm, " + what);
    }
  }
}

TEST(GatedRmsNormCudaTest, RejectsBadArguments) {
  DeviceArray<float> buf(256);
  float* p = buf.get();
  testing::TestStream stream;
  const Context& ctx = stream.ctx();
  constexpr auto kBad = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(GatedRmsNorm(ctx, p, p, -1, 16, p, 1e-6f, p).code(), kBad);
  EXPECT_EQ(GatedRmsNorm(ctx, p, p, 4, 0, p, 1e-6f, p).code(), kBad);
  EXPECT_EQ(GatedRmsNorm(ctx, p, p, 4, 16, p, -1.0f, p).code(), kBad);
  EXPECT_EQ(GatedRmsNorm(ctx, p, p, 4, 16, p, std::numeric_limits<float>::quiet_NaN(), p).code(),
            kBad);
  EXPECT_EQ(GatedRmsNorm(ctx, nullptr, p, 4, 16, p, 1e-6f, p).code(), kBad);
  EXPECT_EQ(GatedRmsNorm(ctx, p, nullptr, 4, 16, p, 1e-6f, p).code(), kBad);
  EXPECT_EQ(GatedRmsNorm(ctx, p, p, 4, 16, nullptr, 1e-6f, p).code(), kBad);
  EXPECT_EQ(GatedRmsNorm(ctx, p, p, 4, 16, p, 1e-6f, nullptr).code(), kBad);
  ASSERT_TRUE(stream.Finish());
}

}  // namespace
}  // namespace twinspan::cuda
