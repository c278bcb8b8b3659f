// GPU tests of cuda::Rope, cuda::SwiGlu, cuda::Add and cuda::MulSigmoid against their CPU twins on
// random inputs, outputs poisoned first, strided rows with their gaps checked untouched.
// Tolerances: Rope and Add bit for bit (the same correctly rounded fp32 steps, no fma on either
// side on x86-64); SwiGlu and MulSigmoid |gpu - cpu| <= 1e-6 |cpu| + 1e-30 (CUDA's expf is within
// 2 ulp, glibc's within 1). Needs a GPU.
#include <cmath>
#include <cstdint>
#include <ostream>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/add.h"
#include "kernels/cpu/mul_sigmoid.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/swiglu.h"
#include "kernels/cuda/add.cuh"
#include "kernels/cuda/mul_sigmoid.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/swiglu.cuh"
#include "tests/cuda/cuda_test_util.h"

namespace twinspan::cuda {
namespace {

using testing::BitMismatches;
using testing::DeviceArray;
using testing::IsPoison;
using testing::OutsideTolerance;
using testing::RandomFloats;

struct RopeCase {
  int64_t rows, heads, head_dim, rot_dim, pad;
};

void PrintTo(const RopeCase& c, std::ostream* os) {
  *os << c.rows << " rows, " << c.heads << " heads x " << c.head_dim << ", rot_dim " << c.rot_dim
      << ", pad " << c.pad;
}

class RopeCudaTest : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeCudaTest, EqualsCpuBitForBit) {
  const RopeCase c = GetParam();
  const int64_t stride = c.heads * c.head_dim + c.pad, half = c.rot_dim / 2;
  std::vector<int64_t> positions(c.rows);
  for (int64_t r = 0; r < c.rows; ++r) positions[r] = 1000 + 37 * r;  // A verify window far out.
  std::vector<float> cos(c.rows * half), sin(c.rows * half);
  ASSERT_TRUE(
      cpu::RopeAngles(positions.data(), c.rows, c.rot_dim, 1e6, cos.data(), sin.data()).ok());
  std::vector<float> x = RandomFloats(c.rows * stride, 31 + c.rot_dim, 4.0f);
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t i = c.heads * c.head_dim; i < stride; ++i) x[r * stride + i] = NAN;  // Gaps.
  }
  std::vector<float> want = x;
  ASSERT_TRUE(cpu::Rope({}, want.data(), stride, c.rows, c.heads, c.head_dim, c.rot_dim, cos.data(),
                        sin.data())
                  .ok());
  DeviceArray<float> dx(x), dcos(cos), dsin(sin);
  ASSERT_TRUE(
      Rope({}, dx.get(), stride, c.rows, c.heads, c.head_dim, c.rot_dim, dcos.get(), dsin.get())
          .ok());
  EXPECT_CUDA_CLEAN();
  EXPECT_EQ(BitMismatches(dx.Download(), want), 0u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, RopeCudaTest,
                         ::testing::Values(RopeCase{1, 4, 64, 64, 0}, RopeCase{33, 4, 64, 64, 8},
                                           RopeCase{17, 24, 256, 64, 0},  // Partial (0.25).
                                           RopeCase{64, 2, 64, 16, 3}));

TEST(RopeCudaTest, RefusesBadArguments) {
  DeviceArray<float> x(256), cs(64);
  EXPECT_TRUE(absl::IsInvalidArgument(Rope({}, x.get(), 256, 1, 4, 64, 63, cs.get(), cs.get())));
  EXPECT_TRUE(absl::IsInvalidArgument(Rope({}, x.get(), 256, 1, 4, 64, 128, cs.get(), cs.get())));
  EXPECT_TRUE(absl::IsInvalidArgument(Rope({}, x.get(), 255, 1, 4, 64, 64, cs.get(), cs.get())));
  EXPECT_TRUE(absl::IsInvalidArgument(Rope({}, x.get(), 256, 1, 0, 64, 64, cs.get(), cs.get())));
  EXPECT_TRUE(absl::IsInvalidArgument(Rope({}, x.get(), 256, 1, 4, 64, 64, nullptr, cs.get())));
}

// ---- SwiGlu -------------------------------------------------------------------------------------

TEST(SwiGluCudaTest, FusedGateUpMatchesCpuAndLeavesGapsAlone) {
  const int64_t rows = 19, dim = 1000, in_stride = 2 * dim, out_stride = dim + 24;
  const std::vector<float> gate_up = RandomFloats(rows * in_stride, 41, 9.0f);
  std::vector<float> want(rows * out_stride, 0.0f);
  ASSERT_TRUE(cpu::SwiGlu({}, gate_up.data(), gate_up.data() + dim, in_stride, rows, dim,
                          want.data(), out_stride)
                  .ok());
  DeviceArray<float> din(gate_up), dout(rows * out_stride);
  dout.Poison();
  ASSERT_TRUE(
      SwiGlu({}, din.get(), din.get() + dim, in_stride, rows, dim, dout.get(), out_stride).ok());
  EXPECT_CUDA_CLEAN();
  const std::vector<float> got = dout.Download();
  std::vector<float> g, w;
  size_t gaps = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < out_stride; ++i) {
      if (i < dim) {
        g.push_back(got[r * out_stride + i]);
        w.push_back(want[r * out_stride + i]);
      } else {
        gaps += !IsPoison(got[r * out_stride + i]);
      }
    }
  }
  EXPECT_EQ(OutsideTolerance(g, w, 1e-6, 1e-30), 0u);
  EXPECT_EQ(gaps, 0u);
}

TEST(SwiGluCudaTest, OutputMayAliasTheGate) {
  const int64_t rows = 5, dim = 300;
  const std::vector<float> gate = RandomFloats(rows * dim, 42, 6.0f);
  const std::vector<float> up = RandomFloats(rows * dim, 43);
  std::vector<float> want(rows * dim);
  ASSERT_TRUE(cpu::SwiGlu({}, gate.data(), up.data(), dim, rows, dim, want.data(), dim).ok());
  DeviceArray<float> dg(gate), du(up);
  ASSERT_TRUE(SwiGlu({}, dg.get(), du.get(), dim, rows, dim, dg.get(), dim).ok());
  EXPECT_CUDA_CLEAN();
  EXPECT_EQ(OutsideTolerance(dg.Download(), want, 1e-6, 1e-30), 0u);
}

TEST(SwiGluCudaTest, RefusesBadArguments) {
  DeviceArray<float> a(64);
  EXPECT_TRUE(absl::IsInvalidArgument(SwiGlu({}, a.get(), a.get(), 8, 1, 0, a.get(), 8)));
  EXPECT_TRUE(absl::IsInvalidArgument(SwiGlu({}, a.get(), a.get(), 7, 1, 8, a.get(), 8)));
  EXPECT_TRUE(absl::IsInvalidArgument(SwiGlu({}, a.get(), a.get(), 8, 1, 8, a.get(), 7)));
  EXPECT_TRUE(absl::IsInvalidArgument(SwiGlu({}, a.get(), a.get(), 8, -1, 8, a.get(), 8)));
  EXPECT_TRUE(absl::IsInvalidArgument(SwiGlu({}, nullptr, a.get(), 8, 1, 8, a.get(), 8)));
}

// ---- Add, MulSigmoid ----------------------------------------------------------------------------

TEST(AddCudaTest, EqualsCpuSumBitForBitInPlace) {
  const int64_t n = 100003;
  const std::vector<float> a = RandomFloats(n, 51, 100.0f), b = RandomFloats(n, 52, 1e-3f);
  std::vector<float> want(n);
  ASSERT_TRUE(cpu::Add({}, a.data(), b.data(), n, want.data()).ok());
  DeviceArray<float> da(a), db(b), out(n);
  out.Poison();
  ASSERT_TRUE(Add({}, da.get(), db.get(), n, out.get()).ok());
  ASSERT_TRUE(Add({}, da.get(), db.get(), n, da.get()).ok());  // out aliases a.
  EXPECT_CUDA_CLEAN();
  EXPECT_EQ(BitMismatches(out.Download(), want), 0u);
  EXPECT_EQ(BitMismatches(da.Download(), want), 0u);
  EXPECT_TRUE(absl::IsInvalidArgument(Add({}, da.get(), db.get(), -1, out.get())));
  EXPECT_TRUE(absl::IsInvalidArgument(Add({}, nullptr, db.get(), 4, out.get())));
}

TEST(MulSigmoidCudaTest, MatchesCpuAndLeavesTheGateAlone) {
  const int64_t rows = 23, dim = 512, x_stride = 2 * dim, gate_stride = 2 * dim;
  // Per head [query, gate] as Qwen3.5's q_proj lays them out: x and gate interleave.
  const std::vector<float> x = RandomFloats(rows * x_stride, 61, 3.0f);
  std::vector<float> want = x;
  ASSERT_TRUE(
      cpu::MulSigmoid({}, want.data(), x_stride, want.data() + dim, gate_stride, rows, dim).ok());
  DeviceArray<float> dx(x);
  ASSERT_TRUE(MulSigmoid({}, dx.get(), x_stride, dx.get() + dim, gate_stride, rows, dim).ok());
  EXPECT_CUDA_CLEAN();
  const std::vector<float> got = dx.Download();
  std::vector<float> g, w;
  size_t gate_changed = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < dim; ++i) {
      g.push_back(got[r * x_stride + i]);
      w.push_back(want[r * x_stride + i]);
      gate_changed +=
          testing::Bits(got[r * x_stride + dim + i]) != testing::Bits(x[r * x_stride + dim + i]);
    }
  }
  EXPECT_EQ(OutsideTolerance(g, w, 1e-6, 1e-30), 0u);
  EXPECT_EQ(gate_changed, 0u);
  EXPECT_TRUE(absl::IsInvalidArgument(MulSigmoid({}, dx.get(), 8, dx.get(), 8, 1, 9)));
  EXPECT_TRUE(absl::IsInvalidArgument(MulSigmoid({}, dx.get(), 8, dx.get(), 8, -1, 8)));
  EXPECT_TRUE(absl::IsInvalidArgument(MulSigmoid({}, nullptr, 8, dx.get(), 8, 1, 8)));
}

}  // namespace
}  // namespace twinspan::cuda
