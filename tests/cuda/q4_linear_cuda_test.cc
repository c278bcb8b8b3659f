// GPU tests of kernels/cuda/q4_linear against cpu::Q4Linear on random weights and inputs (never
// zeros): within the stated bound for every shape class (column counts that pick each warp width,
// k with and without a partial 1024-feature chunk, strided rows), row invariance bit for bit for
// 1..64 rows, the same bits for every forced columns-per-warp tuning and for up to three weights in
// one launch, outputs outside the written range left alone, and bad arguments refused. Needs a
// GPU: run through scripts/gpu-check.sh, not ctest.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/q4_linear.h"
#include "kernels/cuda/q4_linear.cuh"
#include "kernels/cuda/q4_linear_weight.h"

namespace twinspan::cuda {
namespace {

#define CUDA_OK(expr)                                                           \
  do {                                                                          \
    const cudaError_t cuda_ok_error = (expr);                                   \
    ASSERT_EQ(cuda_ok_error, cudaSuccess) << cudaGetErrorString(cuda_ok_error); \
  } while (false)

std::vector<float> Normal(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

cpu::Q4Weight RandomWeight(int64_t n, int64_t k, uint32_t seed) {
  auto w = cpu::Q4Weight::Quantize("w", n, k, Normal(n * k, seed, 0.02f));
  EXPECT_TRUE(w.ok()) << w.status();
  return *std::move(w);
}

class DeviceFloats {
 public:
  explicit DeviceFloats(size_t n) : n_(n) {
    if (cudaMalloc(&ptr_, n * sizeof(float)) != cudaSuccess) ptr_ = nullptr;
  }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  ~DeviceFloats() { cudaFree(ptr_); }
  float* get() const { return ptr_; }
  cudaError_t Upload(const std::vector<float>& host) {
    return cudaMemcpy(ptr_, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  }
  // NaN bits everywhere, so an element the kernel does not write shows.
  cudaError_t Poison() { return cudaMemset(ptr_, 0xFF, n_ * sizeof(float)); }
  std::vector<float> Download() const {
    std::vector<float> host(n_);
    EXPECT_EQ(cudaMemcpy(host.data(), ptr_, n_ * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return host;
  }

 private:
  float* ptr_ = nullptr;
  size_t n_;
};

DeviceQ4Weight Upload(const cpu::Q4Weight& w) {
  auto d =
      DeviceQ4Weight::Upload(w.out_features(), w.in_features(), w.codes(), w.scales(), w.offsets());
  EXPECT_TRUE(d.ok()) << d.status();
  return *std::move(d);
}

// Runs the GPU op on host rows x (row stride x_stride); returns y with row stride y_stride.
std::vector<float> RunGpu(const DeviceQ4Weight& w, const std::vector<float>& x, int64_t rows,
                          int64_t x_stride, int64_t y_stride, int columns = 0) {
  DeviceFloats xd(x.size()), yd(rows * y_stride);
  EXPECT_EQ(xd.Upload(x), cudaSuccess);
  EXPECT_EQ(yd.Poison(), cudaSuccess);
  Context ctx;
  ctx.q4_columns = columns;
  const absl::Status s = Q4Linear(ctx, xd.get(), x_stride, rows, w.view(), yd.get(), y_stride);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return yd.Download();
}

struct Shape {
  int64_t n, k;
};

// Tolerance: both orders add k products in fp32; the CPU's chain is k / 8 + 3 adds deep, the
// GPU's k / 32 + 5, so |gpu - cpu| <= (k / 8 + k / 32 + 8) 2^-24 sum_i |x_i w_i| (Higham's bound).
TEST(Q4LinearCudaTest, MatchesTheCpuOpWithinTheSummationBound) {
  // On 132 SMs n 17408 and 4096 run 4 columns a warp, the others 2 (the next test forces 1).
  for (const Shape shape : {Shape{45, 128}, Shape{1280, 5120}, Shape{300, 1152}, Shape{4096, 384},
                            Shape{5120, 256}, Shape{17408, 256}, Shape{256, 17408}}) {
    const cpu::Q4Weight w = RandomWeight(shape.n, shape.k, 11);
    const DeviceQ4Weight dw = Upload(w);
    const std::vector<float> dense = w.Dequantize();
    for (const int64_t rows : {1, 3, 8, 13, 64}) {
      const int64_t x_stride = shape.k + 4, y_stride = shape.n + 3;
      const std::vector<float> x = Normal(rows * x_stride, 12 + rows, 1.0f);
      std::vector<float> want(rows * y_stride, 0.0f);
      ASSERT_TRUE(cpu::Q4Linear({}, x.data(), x_stride, rows, w, want.data(), y_stride).ok());
      const std::vector<float> got = RunGpu(dw, x, rows, x_stride, y_stride);
      const double depth = shape.k / 8.0 + shape.k / 32.0 + 8.0;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < shape.n; ++j) {
          double magnitude = 0;
          for (int64_t i = 0; i < shape.k; ++i) {
            magnitude += std::fabs(double(x[r * x_stride + i]) * dense[j * shape.k + i]);
          }
          const float g = got[r * y_stride + j], c = want[r * y_stride + j];
          ASSERT_LE(std::fabs(double(g) - c), depth * std::ldexp(magnitude, -24) + 1e-30)
              << "n " << shape.n << " k " << shape.k << " rows " << rows << " at " << r << "," << j
              << ": gpu " << g << " cpu " << c;
        }
        for (int64_t j = shape.n; j < y_stride; ++j) {  // The stride's padding stays poisoned.
          ASSERT_TRUE(std::isnan(got[r * y_stride + j])) << r << "," << j;
        }
      }
    }
  }
}

// Each row count picks its own row tile (1, 2, 4, 8) and grid; every row keeps its one-row bits.
TEST(Q4LinearCudaTest, RowInvariantBitForBitForOneToSixtyFourRows) {
  for (const Shape shape :
       {Shape{1280, 5120}, Shape{5120, 256}, Shape{17408, 256}, Shape{200, 1152}}) {
    const cpu::Q4Weight w = RandomWeight(shape.n, shape.k, 21);
    const DeviceQ4Weight dw = Upload(w);
    const std::vector<float> x = Normal(64 * shape.k, 22, 1.0f);
    std::vector<float> single(64 * shape.n);
    for (int64_t r = 0; r < 64; ++r) {
      const std::vector<float> row(x.begin() + r * shape.k, x.begin() + (r + 1) * shape.k);
      const std::vector<float> y = RunGpu(dw, row, 1, shape.k, shape.n);
      std::memcpy(single.data() + r * shape.n, y.data(), shape.n * sizeof(float));
    }
    for (int64_t rows = 1; rows <= 64; ++rows) {
      const std::vector<float> head(x.begin(), x.begin() + rows * shape.k);
      const std::vector<float> y = RunGpu(dw, head, rows, shape.k, shape.n);
      ASSERT_EQ(std::memcmp(y.data(), single.data(), rows * shape.n * sizeof(float)), 0)
          << "n " << shape.n << " k " << shape.k << ": " << rows << " rows";
    }
  }
}

// Columns a warp (Context::q4_columns, a tuning) change the grid, never a bit.
TEST(Q4LinearCudaTest, EveryColumnsPerWarpGivesTheSameBits) {
  for (const Shape shape : {Shape{1280, 5120}, Shape{17408, 256}, Shape{45, 1152}}) {
    const cpu::Q4Weight w = RandomWeight(shape.n, shape.k, 41);
    const DeviceQ4Weight dw = Upload(w);
    for (const int64_t rows : {1, 5, 8, 19}) {
      const std::vector<float> x = Normal(rows * shape.k, 42 + rows, 1.0f);
      const std::vector<float> automatic = RunGpu(dw, x, rows, shape.k, shape.n);
      for (const int columns : {1, 2, 4}) {
        const std::vector<float> y = RunGpu(dw, x, rows, shape.k, shape.n, columns);
        ASSERT_EQ(std::memcmp(y.data(), automatic.data(), y.size() * sizeof(float)), 0)
            << "n " << shape.n << " k " << shape.k << " rows " << rows << " columns " << columns;
      }
    }
  }
}

// Up to three weights of one k in one launch (Q4Linears): each output gets its Q4Linear bits,
// with strided outputs and row counts that pick every row tile.
TEST(Q4LinearCudaTest, WeightsOfOneInputInOneLaunchGiveEachItsOwnBits) {
  const int64_t k = 1152, x_stride = k + 4;
  std::vector<DeviceQ4Weight> weights;
  for (const int64_t n : {4096, 45, 1280})
    weights.push_back(Upload(RandomWeight(n, k, static_cast<uint32_t>(50 + n))));
  for (const int count : {2, 3}) {
    for (const int64_t rows : {1, 3, 8, 19}) {
      const std::vector<float> x = Normal(rows * x_stride, 51 + rows, 1.0f);
      DeviceFloats xd(x.size());
      ASSERT_EQ(xd.Upload(x), cudaSuccess);
      std::vector<std::unique_ptr<DeviceFloats>> together;
      std::vector<Q4LinearOutput> outs;
      for (int i = 0; i < count; ++i) {
        const int64_t y_stride = weights[i].view().n + 3;
        together.push_back(std::make_unique<DeviceFloats>(rows * y_stride));
        ASSERT_EQ(together.back()->Poison(), cudaSuccess);
        outs.push_back({&weights[i].view(), together.back()->get(), y_stride});
      }
      ASSERT_TRUE(Q4Linears({}, xd.get(), x_stride, rows, outs.data(), count).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      for (int i = 0; i < count; ++i) {
        const int64_t y_stride = weights[i].view().n + 3;
        const std::vector<float> alone = RunGpu(weights[i], x, rows, x_stride, y_stride);
        const std::vector<float> got = together[i]->Download();
        ASSERT_EQ(std::memcmp(got.data(), alone.data(), got.size() * sizeof(float)), 0)
            << count << " weights, " << rows << " rows: weight " << i;
      }
    }
  }
}

TEST(Q4LinearCudaTest, SeveralWeightsRejectMismatchedKAndBadCounts) {
  const DeviceQ4Weight a = Upload(RandomWeight(64, 256, 61)), b = Upload(RandomWeight(64, 384, 62));
  DeviceFloats x(size_t{2} * 384), y(size_t{2} * 64), z(size_t{2} * 64);
  const absl::StatusCode bad = absl::StatusCode::kInvalidArgument;
  const Q4LinearOutput mixed[] = {{&a.view(), y.get(), 64}, {&b.view(), z.get(), 64}};
  EXPECT_EQ(Q4Linears({}, x.get(), 384, 2, mixed, 2).code(), bad);  // k 256 and 384.
  const Q4LinearOutput four[] = {{&a.view(), y.get(), 64},
                                 {&a.view(), z.get(), 64},
                                 {&a.view(), y.get(), 64},
                                 {&a.view(), z.get(), 64}};
  EXPECT_EQ(Q4Linears({}, x.get(), 256, 2, four, 4).code(), bad);
  EXPECT_EQ(Q4Linears({}, x.get(), 256, 2, four, 0).code(), bad);
  const Q4LinearOutput null_weight[] = {{&a.view(), y.get(), 64}, {nullptr, z.get(), 64}};
  EXPECT_EQ(Q4Linears({}, x.get(), 256, 2, null_weight, 2).code(), bad);
  const Q4LinearOutput narrow[] = {{&a.view(), y.get(), 64}, {&a.view(), z.get(), 63}};
  EXPECT_EQ(Q4Linears({}, x.get(), 256, 2, narrow, 2).code(), bad);
  CUDA_OK(cudaGetLastError());
}

TEST(Q4LinearCudaTest, RefusesBadArguments) {
  const cpu::Q4Weight w = RandomWeight(64, 256, 31);
  const DeviceQ4Weight dw = Upload(w);
  DeviceFloats x(size_t{4} * 260), y(size_t{4} * 64);
  const Q4DeviceWeight& v = dw.view();
  const auto code = [&](const float* xp, int64_t xs, int64_t rows, const Q4DeviceWeight& wv,
                        float* yp,
                        int64_t ys) { return Q4Linear({}, xp, xs, rows, wv, yp, ys).code(); };
  const absl::StatusCode bad = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(code(x.get() + 1, 256, 2, v, y.get(), 64), bad);  // x not 16-byte aligned.
  EXPECT_EQ(code(x.get(), 258, 2, v, y.get(), 64), bad);      // x_stride not a multiple of 4.
  EXPECT_EQ(code(x.get(), 252, 2, v, y.get(), 64), bad);      // x_stride < k.
  EXPECT_EQ(code(x.get(), 256, 2, v, y.get(), 63), bad);      // y_stride < n.
  EXPECT_EQ(code(x.get(), 256, -1, v, y.get(), 64), bad);
  EXPECT_EQ(code(nullptr, 256, 2, v, y.get(), 64), bad);
  EXPECT_EQ(code(x.get(), 256, 2, v, nullptr, 64), bad);
  Q4DeviceWeight odd = v;
  odd.k = 200;
  EXPECT_EQ(code(x.get(), 256, 2, odd, y.get(), 64), bad);
  odd = v;
  odd.codes = nullptr;
  EXPECT_EQ(code(x.get(), 256, 2, odd, y.get(), 64), bad);
  EXPECT_EQ(code(x.get(), 256, 0, v, y.get(), 64), absl::StatusCode::kOk);
  Context three_columns;
  three_columns.q4_columns = 3;
  EXPECT_EQ(Q4Linear(three_columns, x.get(), 256, 2, v, y.get(), 64).code(), bad);
  EXPECT_FALSE(DeviceQ4Weight::Upload(64, 256, w.codes().subspan(1), w.scales(), w.offsets()).ok());
  EXPECT_FALSE(DeviceQ4Weight::Upload(64, 200, w.codes(), w.scales(), w.offsets()).ok());
  CUDA_OK(cudaGetLastError());
}

}  // namespace
}  // namespace twinspan::cuda
