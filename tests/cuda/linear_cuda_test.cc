// GPU tests of the dense cuda::Linear (through DeviceDenseWeight) against cpu::Linear on random
// weights stored bf16, f16 and f32 (never zeros), narrow (the split-k kernel) and n >= 1024 (the
// plain one), outputs poisoned first. Tolerance: every output |gpu - cpu| <= 1e-5 * sum_k |x_k
// w_jk| (only the fp32 summation order differs); row invariance bit for bit for 1..64 rows and
// between 16-byte and scalar input loads. Needs a GPU.
#include <cmath>
#include <cstdint>
#include <ostream>
#include <vector>

#include "common/safetensors/half.h"
#include "gtest/gtest.h"
#include "kernels/cpu/linear.h"
#include "kernels/cuda/dense_weight.h"
#include "kernels/cuda/linear.cuh"
#include "tests/cuda/cuda_test_util.h"

namespace twinspan::cuda {
namespace {

using testing::BitMismatches;
using testing::DeviceArray;
using testing::IsPoison;
using testing::RandomFloats;

struct LinearCase {
  int64_t n, k;
  DenseDtype dtype;
};

void PrintTo(const LinearCase& c, std::ostream* os) {
  *os << "[" << c.n << ", " << c.k << "] dtype " << static_cast<int>(c.dtype);
}

cpu::LinearWeight MakeWeight(const LinearCase& c) {
  std::vector<float> w = RandomFloats(c.n * c.k, 101 + c.n + c.k, 0.1f);
  for (float& v : w) {
    if (c.dtype == DenseDtype::kBF16) v = BFloat16ToFloat(FloatToBFloat16(v));
    if (c.dtype == DenseDtype::kF16) v = HalfToFloat(FloatToHalf(v * 10.0f));  // Outside bf16.
  }
  auto weight = cpu::LinearWeight::Dense(c.n, c.k, std::move(w));
  EXPECT_TRUE(weight.ok());
  return *weight;
}

class LinearCudaTest : public ::testing::TestWithParam<LinearCase> {};

TEST_P(LinearCudaTest, MatchesCpuAndRowsAreInvariant) {
  const LinearCase c = GetParam();
  const cpu::LinearWeight weight = MakeWeight(c);
  auto device = DeviceDenseWeight::Upload(weight);
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ(device->view().dtype, c.dtype);
  const int64_t rows = 64, x_stride = c.k + 1, y_stride = c.n + 3;  // Unaligned x rows.
  const std::vector<float> x = RandomFloats(rows * x_stride, 103 + c.k, 2.0f);
  std::vector<float> want(rows * c.n);
  ASSERT_TRUE(cpu::Linear({}, x.data(), x_stride, rows, weight, want.data(), c.n).ok());
  DeviceArray<float> dx(x), dy(rows * y_stride);
  dy.Poison();
  ASSERT_TRUE(Linear({}, dx.get(), x_stride, rows, device->view(), dy.get(), y_stride).ok());
  EXPECT_CUDA_CLEAN();
  const std::vector<float> got = dy.Download();
  size_t bad = 0, gaps = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < y_stride; ++j) {
      const float g = got[r * y_stride + j];
      if (j >= c.n) {
        gaps += !IsPoison(g);
        continue;
      }
      double magnitude = 0;
      const float* wj = weight.dense_row(j);
      for (int64_t i = 0; i < c.k; ++i) magnitude += std::fabs(x[r * x_stride + i] * wj[i]);
      bad += !(std::fabs(g - want[r * c.n + j]) <= 1e-5 * magnitude);
    }
  }
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(gaps, 0u);

  // The same rows packed and 16-byte aligned take the vector loads: same bits.
  std::vector<float> packed(rows * c.k);
  for (int64_t r = 0; r < rows; ++r) {
    std::copy(x.begin() + r * x_stride, x.begin() + r * x_stride + c.k, packed.begin() + r * c.k);
  }
  DeviceArray<float> dp(packed), dz(rows * y_stride);
  dz.Poison();  // The gaps past each row stay poisoned in both outputs.
  ASSERT_TRUE(Linear({}, dp.get(), c.k, rows, device->view(), dz.get(), y_stride).ok());
  EXPECT_EQ(BitMismatches(dz.Download(), got), 0u);

  for (int64_t n = 1; n < rows; ++n) {
    DeviceArray<float> part(n * y_stride);
    part.Poison();
    ASSERT_TRUE(Linear({}, dx.get(), x_stride, n, device->view(), part.get(), y_stride).ok());
    ASSERT_EQ(
        BitMismatches(part.Download(), std::vector<float>(got.begin(), got.begin() + n * y_stride)),
        0u)
        << n << " rows";
  }
  EXPECT_CUDA_CLEAN();
}

INSTANTIATE_TEST_SUITE_P(Shapes, LinearCudaTest,
                         ::testing::Values(LinearCase{256, 256, DenseDtype::kBF16},
                                           LinearCase{37, 1000, DenseDtype::kBF16},
                                           LinearCase{512, 4096, DenseDtype::kBF16},
                                           LinearCase{6, 256, DenseDtype::kF16},
                                           LinearCase{100, 384, DenseDtype::kF16},
                                           LinearCase{3, 13, DenseDtype::kF32},
                                           LinearCase{130, 520, DenseDtype::kF32},
                                           // The 27B's Gated DeltaNet gate projections.
                                           LinearCase{48, 5120, DenseDtype::kF16},
                                           // Wide enough for the unsplit kernel.
                                           LinearCase{1027, 264, DenseDtype::kBF16},
                                           LinearCase{1024, 40, DenseDtype::kF32}));

TEST(LinearCudaTest, RefusesBadArguments) {
  const cpu::LinearWeight weight = MakeWeight({16, 64, DenseDtype::kBF16});
  auto device = DeviceDenseWeight::Upload(weight);
  ASSERT_TRUE(device.ok());
  DeviceArray<float> x(256), y(64);
  const DenseWeightView w = device->view();
  EXPECT_TRUE(absl::IsInvalidArgument(Linear({}, x.get(), 63, 1, w, y.get(), 16)));
  EXPECT_TRUE(absl::IsInvalidArgument(Linear({}, x.get(), 64, 1, w, y.get(), 15)));
  EXPECT_TRUE(absl::IsInvalidArgument(Linear({}, x.get(), 64, -1, w, y.get(), 16)));
  EXPECT_TRUE(absl::IsInvalidArgument(Linear({}, nullptr, 64, 1, w, y.get(), 16)));
  EXPECT_TRUE(absl::IsInvalidArgument(Linear({}, x.get(), 64, 1, DenseWeightView{}, y.get(), 16)));
  DenseWeightView odd_pitch = w;
  odd_pitch.row_pitch = 66;
  EXPECT_TRUE(absl::IsInvalidArgument(Linear({}, x.get(), 64, 1, odd_pitch, y.get(), 16)));
  EXPECT_TRUE(absl::IsInvalidArgument(DeviceDenseWeight::Upload(cpu::LinearWeight()).status()));
}

}  // namespace
}  // namespace twinspan::cuda
