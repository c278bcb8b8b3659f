// cuda::TrellisEncode against its CPU twin cpu::TrellisEncode (kernels/cpu/trellis_encode.h): the
// same states and values bit for bit for every K and codebook, a closed ring, and the encoder's
// throughput at K = 4 with the time it implies for a 5120 x 17408 linear (348,160 tiles, plus the
// global scale search's ~30,600 sampled encodes).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/trellis_encode.h"
#include "kernels/cuda/trellis_encode.cuh"
#include "tests/cuda/cuda_test_util.h"

namespace twinspan::cuda {
namespace {

using testing::DeviceArray;

std::vector<float> Gaussian(int64_t tiles, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> t(static_cast<size_t>(tiles * 256));
  for (float& v : t) v = normal(rng);
  return t;
}

TEST(TrellisEncodeCudaTest, EqualsTheCpuEncoderForEveryKAndCodebook) {
  constexpr int64_t kTiles = 5;  // Two CPU pairs and a single.
  cpu::ThreadPool pool(4);
  for (const exl3::Codebook cb :
       {exl3::Codebook::k3Inst, exl3::Codebook::kMcg, exl3::Codebook::kMul1}) {
    for (int bits = 1; bits <= 8; ++bits) {
      SCOPED_TRACE(::testing::Message() << exl3::CodebookName(cb) << " K=" << bits);
      const std::vector<float> tiles = Gaussian(kTiles, 1.1f, 10 * bits + static_cast<int>(cb));
      std::vector<uint16_t> cpu_states(tiles.size());
      std::vector<float> cpu_values(tiles.size());
      ASSERT_TRUE(cpu::TrellisEncode(cpu::Context{&pool}, tiles.data(), kTiles, {bits, cb},
                                     cpu_states.data(), cpu_values.data())
                      .ok());
      DeviceArray<float> d_tiles(tiles), d_values(tiles.size());
      DeviceArray<uint16_t> d_states(tiles.size());
      d_values.Poison();
      ASSERT_TRUE(TrellisEncode(Context{}, d_tiles.get(), kTiles, {bits, cb}, d_states.get(),
                                d_values.get())
                      .ok());
      EXPECT_CUDA_CLEAN();
      EXPECT_EQ(d_states.Download(), cpu_states);
      EXPECT_EQ(testing::BitMismatches(d_values.Download(), cpu_values), 0u);
    }
  }
}

TEST(TrellisEncodeCudaTest, RingClosesAndBadArgumentsAreRefused) {
  const std::vector<float> tiles = Gaussian(3, 1.0f, 5);
  DeviceArray<float> d_tiles(tiles), d_values(tiles.size());
  DeviceArray<uint16_t> d_states(tiles.size());
  ASSERT_TRUE(TrellisEncode(Context{}, d_tiles.get(), 3, {6, exl3::Codebook::kMul1}, d_states.get(),
                            d_values.get())
                  .ok());
  const std::vector<uint16_t> s = d_states.Download();
  for (int t = 0; t < 3; ++t) {
    for (int p = 0; p < 256; ++p) {
      ASSERT_EQ(s[t * 256 + p] >> 6, s[t * 256 + (p + 255) % 256] & 0x3ff) << t << " " << p;
    }
  }
  EXPECT_EQ(TrellisEncode(Context{}, d_tiles.get(), 3, {9, exl3::Codebook::kMul1}, d_states.get(),
                          d_values.get())
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TrellisEncode(Context{}, nullptr, 3, {4, exl3::Codebook::kMul1}, d_states.get(),
                          d_values.get())
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TrellisEncodeCudaTest, Throughput) {
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  const int64_t tiles = 8 * static_cast<int64_t>(sms);  // Eight waves of one block per SM.
  const std::vector<float> host = Gaussian(tiles, 1.0f, 9);
  DeviceArray<float> d_tiles(host), d_values(host.size());
  DeviceArray<uint16_t> d_states(host.size());
  for (const int bits : {2, 4, 6}) {
    const cpu::TrellisEncodeParams params{bits, exl3::Codebook::kMul1};
    ASSERT_TRUE(
        TrellisEncode(Context{}, d_tiles.get(), sms, params, d_states.get(), d_values.get()).ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // Warm.
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(
        TrellisEncode(Context{}, d_tiles.get(), tiles, params, d_states.get(), d_values.get())
            .ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double per_second = static_cast<double>(tiles) / seconds;
    std::printf(
        "TrellisEncode K=%d mul1: %lld tiles in %.3f s = %.0f tiles/s on %d SMs; a 5120 x "
        "17408 linear (378,760 encodes) would take %.1f s\n",
        bits, static_cast<long long>(tiles), seconds, per_second, sms, 378760.0 / per_second);
  }
}

}  // namespace
}  // namespace twinspan::cuda
