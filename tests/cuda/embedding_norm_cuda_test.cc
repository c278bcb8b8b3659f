// GPU tests of cuda::Embedding and cuda::RmsNorm against their CPU twins (kernels/cpu) on random
// inputs, outputs poisoned first. Tolerances: Embedding bit for bit (an exact widening);
// RmsNorm |gpu - cpu| <= 1e-5 |cpu| + 1e-6 (only the order of the sum of squares differs), and bit
// for bit between row counts 1..64 (row invariance); the fused AddRmsNorm bit for bit Add then
// RmsNorm. Needs a GPU: scripts/gpu-check.sh runs it.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "common/safetensors/half.h"
#include "gtest/gtest.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cuda/add.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/embedding_table.h"
#include "kernels/cuda/rms_norm.cuh"
#include "tests/cuda/cuda_test_util.h"

namespace twinspan::cuda {
namespace {

using testing::BitMismatches;
using testing::DeviceArray;
using testing::IsPoison;
using testing::RandomFloats;

cpu::EmbeddingTable MakeTable(cpu::EmbeddingDtype dtype, int64_t rows, int64_t dim) {
  const std::vector<float> values = RandomFloats(rows * dim, 7 + static_cast<int>(dtype), 2.0f);
  std::vector<uint8_t> raw;
  if (dtype == cpu::EmbeddingDtype::kF32) {
    raw.resize(values.size() * 4);
    std::memcpy(raw.data(), values.data(), raw.size());
  } else {
    raw.resize(values.size() * 2);
    for (size_t i = 0; i < values.size(); ++i) {
      const uint16_t h =
          dtype == cpu::EmbeddingDtype::kBF16 ? FloatToBFloat16(values[i]) : FloatToHalf(values[i]);
      std::memcpy(&raw[2 * i], &h, 2);
    }
  }
  auto table = cpu::EmbeddingTable::FromRaw(dtype, rows, dim, raw.data(), raw.size());
  EXPECT_TRUE(table.ok()) << table.status();
  return *table;
}

std::vector<int32_t> RandomIds(size_t n, int32_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(n);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % vocab);
  return ids;
}

class EmbeddingCudaTest : public ::testing::TestWithParam<cpu::EmbeddingDtype> {};

TEST_P(EmbeddingCudaTest, RowsEqualCpuBitForBit) {
  const int64_t vocab = 3001, dim = 200;
  const cpu::EmbeddingTable table = MakeTable(GetParam(), vocab, dim);
  auto device = DeviceEmbeddingTable::Upload(table);
  ASSERT_TRUE(device.ok()) << device.status();
  for (const int64_t rows : {1, 7, 64, 600}) {  // 600 crosses the 512-id launch boundary.
    SCOPED_TRACE(rows);
    const std::vector<int32_t> ids = RandomIds(rows, vocab, 100 + rows);
    std::vector<float> want(rows * dim);
    ASSERT_TRUE(cpu::Embedding({}, table, ids.data(), rows, want.data()).ok());
    DeviceArray<float> out(rows * dim);
    out.Poison();
    ASSERT_TRUE(Embedding({}, device->view(), ids.data(), rows, out.get()).ok());
    EXPECT_CUDA_CLEAN();
    EXPECT_EQ(BitMismatches(out.Download(), want), 0u);

    DeviceArray<int32_t> device_ids(ids);
    DeviceArray<float> out2(rows * dim);
    out2.Poison();
    ASSERT_TRUE(EmbeddingDeviceIds({}, device->view(), device_ids.get(), rows, out2.get()).ok());
    EXPECT_CUDA_CLEAN();
    EXPECT_EQ(BitMismatches(out2.Download(), want), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, EmbeddingCudaTest,
                         ::testing::Values(cpu::EmbeddingDtype::kF32, cpu::EmbeddingDtype::kBF16,
                                           cpu::EmbeddingDtype::kF16));

TEST(EmbeddingCudaTest, DeviceIdOutsideTheTableWritesNaN) {
  const cpu::EmbeddingTable table = MakeTable(cpu::EmbeddingDtype::kBF16, 50, 16);
  auto device = DeviceEmbeddingTable::Upload(table);
  ASSERT_TRUE(device.ok());
  DeviceArray<int32_t> ids(std::vector<int32_t>{3, 50, -1, 49});
  DeviceArray<float> out(64);  // 4 rows of 16.
  out.Poison();
  ASSERT_TRUE(EmbeddingDeviceIds({}, device->view(), ids.get(), 4, out.get()).ok());
  EXPECT_CUDA_CLEAN();
  const std::vector<float> got = out.Download();
  std::vector<float> row(16);
  for (int64_t r : {0, 3}) {
    table.Row(r == 0 ? 3 : 49, row.data());
    EXPECT_EQ(
        BitMismatches(std::vector<float>(got.begin() + r * 16, got.begin() + r * 16 + 16), row),
        0u);
  }
  for (int i = 16; i < 48; ++i) EXPECT_TRUE(std::isnan(got[i]) && !IsPoison(got[i])) << i;
}

TEST(EmbeddingCudaTest, RefusesBadArguments) {
  const cpu::EmbeddingTable table = MakeTable(cpu::EmbeddingDtype::kF32, 10, 4);
  auto device = DeviceEmbeddingTable::Upload(table);
  ASSERT_TRUE(device.ok());
  DeviceArray<float> out(8);
  const int32_t bad[2] = {1, 10};
  absl::Status s = Embedding({}, device->view(), bad, 2, out.get());
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("row 1"), std::string::npos) << s;
  const int32_t negative[1] = {-3};
  EXPECT_TRUE(absl::IsInvalidArgument(Embedding({}, device->view(), negative, 1, out.get())));
  EXPECT_TRUE(absl::IsInvalidArgument(Embedding({}, device->view(), bad, -1, out.get())));
  EXPECT_TRUE(absl::IsInvalidArgument(Embedding({}, EmbeddingView{}, bad, 1, out.get())));
  EXPECT_TRUE(absl::IsInvalidArgument(Embedding({}, device->view(), nullptr, 1, out.get())));
  EXPECT_TRUE(
      absl::IsInvalidArgument(DeviceEmbeddingTable::Upload(cpu::EmbeddingTable()).status()));
}

// ---- RmsNorm ------------------------------------------------------------------------------------

struct NormCase {
  int64_t dim, x_pad, y_pad;  // Strides are dim + pad.
};

void PrintTo(const NormCase& c, std::ostream* os) {
  *os << "dim " << c.dim << ", pads " << c.x_pad << "/" << c.y_pad;
}

std::vector<float> CpuNorm(const std::vector<float>& x, int64_t x_stride, int64_t rows, int64_t dim,
                           const std::vector<float>& w, float eps, int64_t y_stride) {
  std::vector<float> y(rows * y_stride, 0.0f);
  EXPECT_TRUE(
      cpu::RmsNorm({}, x.data(), x_stride, rows, dim, w.data(), eps, y.data(), y_stride).ok());
  return y;
}

class RmsNormCudaTest : public ::testing::TestWithParam<NormCase> {};

TEST_P(RmsNormCudaTest, MatchesCpuWithinToleranceAndLeavesStrideGapsAlone) {
  const NormCase c = GetParam();
  const int64_t rows = 64, xs = c.dim + c.x_pad, ys = c.dim + c.y_pad;
  const float eps = 1e-6f;
  const std::vector<float> x = RandomFloats(rows * xs, 11 + c.dim, 3.0f);
  const std::vector<float> w = RandomFloats(c.dim, 12 + c.dim, 1.5f);
  const std::vector<float> want = CpuNorm(x, xs, rows, c.dim, w, eps, ys);
  DeviceArray<float> dx(x), dw(w), dy(rows * ys);
  dy.Poison();
  ASSERT_TRUE(RmsNorm({}, dx.get(), xs, rows, c.dim, dw.get(), eps, dy.get(), ys).ok());
  EXPECT_CUDA_CLEAN();
  const std::vector<float> got = dy.Download();
  size_t bad = 0, gap_written = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < ys; ++i) {
      const float g = got[r * ys + i], e = want[r * ys + i];
      if (i >= c.dim) {
        gap_written += !IsPoison(g);
      } else if (!(std::fabs(g - e) <= 1e-5f * std::fabs(e) + 1e-6f)) {
        ++bad;
      }
    }
  }
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(gap_written, 0u);

  // Row invariance: the first n rows alone give the same bits as in the 64-row call.
  for (int64_t n = 1; n <= rows; ++n) {
    DeviceArray<float> part(n * ys);
    part.Poison();
    ASSERT_TRUE(RmsNorm({}, dx.get(), xs, n, c.dim, dw.get(), eps, part.get(), ys).ok());
    const std::vector<float> p = part.Download();
    ASSERT_EQ(BitMismatches(p, std::vector<float>(got.begin(), got.begin() + n * ys)), 0u)
        << n << " rows";
  }
}

INSTANTIATE_TEST_SUITE_P(Dims, RmsNormCudaTest,
                         ::testing::Values(NormCase{64, 0, 0}, NormCase{256, 3, 5},
                                           NormCase{1000, 1, 0}, NormCase{1024, 0, 7},
                                           NormCase{1025, 2, 2}, NormCase{5120, 0, 4},
                                           NormCase{8192, 1, 0}, NormCase{8200, 0, 3}));

// The fused residual add: h and y each bit for bit what Add, then RmsNorm of the sum, give (every
// kernel path: the warp rows, the cached block rows, the uncached rows past 8192).
TEST_P(RmsNormCudaTest, AddRmsNormIsAddThenRmsNormBitForBit) {
  const NormCase c = GetParam();
  const int64_t ys = c.dim + c.y_pad;
  const float eps = 1e-6f;
  const std::vector<float> w = RandomFloats(c.dim, 32 + c.dim, 1.5f);
  for (const int64_t rows : {1, 3, 17}) {
    const std::vector<float> h = RandomFloats(rows * c.dim, 33 + rows, 3.0f);
    const std::vector<float> delta = RandomFloats(rows * c.dim, 34 + rows, 2.0f);
    DeviceArray<float> dh(h), fused_h(h), dd(delta), dw(w), want(rows * ys), got(rows * ys);
    want.Poison();
    got.Poison();
    ASSERT_TRUE(Add({}, dh.get(), dd.get(), rows * c.dim, dh.get()).ok());
    ASSERT_TRUE(RmsNorm({}, dh.get(), c.dim, rows, c.dim, dw.get(), eps, want.get(), ys).ok());
    ASSERT_TRUE(
        AddRmsNorm({}, fused_h.get(), dd.get(), rows, c.dim, dw.get(), eps, got.get(), ys).ok());
    EXPECT_CUDA_CLEAN();
    EXPECT_EQ(BitMismatches(fused_h.Download(), dh.Download()), 0u) << rows << " rows: h";
    EXPECT_EQ(BitMismatches(got.Download(), want.Download()), 0u) << rows << " rows: y";
  }
}

TEST(RmsNormCudaTest, InPlaceEqualsOutOfPlace) {
  const int64_t rows = 9, dim = 2048;
  const std::vector<float> x = RandomFloats(rows * dim, 21, 2.0f);
  const std::vector<float> w = RandomFloats(dim, 22);
  DeviceArray<float> dx(x), dw(w), dy(rows * dim);
  ASSERT_TRUE(RmsNorm({}, dx.get(), dim, rows, dim, dw.get(), 1e-5f, dy.get(), dim).ok());
  ASSERT_TRUE(RmsNorm({}, dx.get(), dim, rows, dim, dw.get(), 1e-5f, dx.get(), dim).ok());
  EXPECT_CUDA_CLEAN();
  EXPECT_EQ(BitMismatches(dx.Download(), dy.Download()), 0u);
}

TEST(RmsNormCudaTest, RefusesBadArguments) {
  DeviceArray<float> x(64), w(64), y(64);
  EXPECT_TRUE(absl::IsInvalidArgument(RmsNorm({}, x.get(), 64, 1, 0, w.get(), 1e-6f, y.get(), 64)));
  EXPECT_TRUE(
      absl::IsInvalidArgument(RmsNorm({}, x.get(), 32, 1, 64, w.get(), 1e-6f, y.get(), 64)));
  EXPECT_TRUE(
      absl::IsInvalidArgument(RmsNorm({}, x.get(), 64, 1, 64, w.get(), 1e-6f, y.get(), 63)));
  EXPECT_TRUE(
      absl::IsInvalidArgument(RmsNorm({}, x.get(), 64, -1, 64, w.get(), 1e-6f, y.get(), 64)));
  EXPECT_TRUE(
      absl::IsInvalidArgument(RmsNorm({}, x.get(), 64, 1, 64, w.get(), -1.0f, y.get(), 64)));
  EXPECT_TRUE(
      absl::IsInvalidArgument(RmsNorm({}, x.get(), 64, 1, 64, nullptr, 1e-6f, y.get(), 64)));
  EXPECT_TRUE(absl::IsInvalidArgument(
      AddRmsNorm({}, x.get(), nullptr, 1, 64, w.get(), 1e-6f, y.get(), 64)));
  EXPECT_TRUE(absl::IsInvalidArgument(
      AddRmsNorm({}, nullptr, x.get(), 1, 64, w.get(), 1e-6f, y.get(), 64)));
  EXPECT_TRUE(absl::IsInvalidArgument(
      AddRmsNorm({}, x.get(), x.get(), 1, 64, w.get(), 1e-6f, y.get(), 63)));
}

}  // namespace
}  // namespace twinspan::cuda
