// The quantizer's CUDA tile encoder (kernels/cuda/cuda_tile_encoder.h) against the CPU one: the
// same states and values over batches that grow and shrink its buffers, the same packed linear
// through QuantizeLinear (what twinspan-quantize --device cuda:N writes), and its refusals.
#include <cuda_runtime.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/exl3/quantize/hessian.h"
#include "common/exl3/quantize/quantize_linear.h"
#include "gtest/gtest.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cuda/cuda_tile_encoder.h"
#include "tests/cuda/cuda_test_util.h"

namespace twinspan::cuda {
namespace {

using exl3::Codebook;
using exl3::quantize::CpuTileEncoder;
using exl3::quantize::TileEncoder;

std::unique_ptr<TileEncoder> OpenDevice0() {
  absl::StatusOr<std::unique_ptr<TileEncoder>> encoder = NewCudaTileEncoder(0);
  EXPECT_TRUE(encoder.ok()) << encoder.status();
  return encoder.ok() ? std::move(*encoder) : nullptr;
}

TEST(CudaTileEncoderTest, EqualsTheCpuEncoderAsItsBuffersGrowAndShrink) {
  const std::unique_ptr<TileEncoder> gpu = OpenDevice0();
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->name(), "cuda:0");
  cpu::ThreadPool pool(4);
  const CpuTileEncoder host(&pool);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.2f);
  for (const int64_t tiles : {3, 40, 1, 17}) {
    for (const exl3::quantize::TileCode code :
         {exl3::quantize::TileCode{4, Codebook::kMul1}, exl3::quantize::TileCode{2, Codebook::kMcg},
          exl3::quantize::TileCode{5, Codebook::k3Inst}}) {
      SCOPED_TRACE(::testing::Message() << tiles << " tiles, K=" << code.bits << " "
                                        << exl3::CodebookName(code.codebook));
      std::vector<float> t(static_cast<size_t>(tiles * 256));
      for (float& v : t) v = normal(rng);
      std::vector<uint16_t> want_states(t.size()), got_states(t.size(), 0xFFFF);
      std::vector<float> want_values(t.size()), got_values(t.size(), -1.0f);
      ASSERT_TRUE(host.Encode(code, t.data(), tiles, want_states.data(), want_values.data()).ok());
      const absl::Status s =
          gpu->Encode(code, t.data(), tiles, got_states.data(), got_values.data());
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_EQ(got_states, want_states);
      EXPECT_EQ(testing::BitMismatches(got_values, want_values), 0u);
    }
  }
  EXPECT_CUDA_CLEAN();
}

// The golden problems' recipe: scaled Gaussian W, inputs with per-channel scales.
struct Problem {
  int64_t k = 0, n = 0;
  std::vector<float> w, h, bias;
};

Problem MakeProblem(int64_t k, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  Problem p{k, n, std::vector<float>(k * n), {}, std::vector<float>(n)};
  std::vector<float> in_scale(k);
  for (float& s : in_scale) s = std::exp(0.5f * normal(rng));
  for (float& v : p.w) v = 0.02f * normal(rng);
  for (float& v : p.bias) v = 0.01f * normal(rng);
  const int64_t rows = 256;
  std::vector<float> x(rows * k);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < k; ++i) x[r * k + i] = normal(rng) * in_scale[i];
  }
  exl3::quantize::HessianAccumulator acc(k);
  acc.Add(nullptr, x.data(), rows, k);
  p.h = acc.Mean();
  return p;
}

TEST(CudaTileEncoderTest, QuantizeLinearPacksTheSameBitsAsOnTheCpu) {
  const std::unique_ptr<TileEncoder> gpu = OpenDevice0();
  ASSERT_NE(gpu, nullptr);
  cpu::ThreadPool pool(4);
  const CpuTileEncoder host(&pool);
  const Problem p = MakeProblem(256, 384, 3);
  for (const exl3::quantize::TileCode code :
       {exl3::quantize::TileCode{4, Codebook::kMul1}, exl3::quantize::TileCode{3, Codebook::kMcg},
        exl3::quantize::TileCode{2, Codebook::k3Inst}}) {
    SCOPED_TRACE(::testing::Message()
                 << "K=" << code.bits << " " << exl3::CodebookName(code.codebook));
    exl3::quantize::LinearQuantOptions o;
    o.bits = code.bits;
    o.codebook = code.codebook;
    o.seed = 42;
    const exl3::quantize::LinearQuantInput in{p.w.data(), p.k, p.n, p.h, p.bias};
    const absl::StatusOr<exl3::quantize::QuantizedLinear> want =
        exl3::quantize::QuantizeLinear(&pool, host, in, o);
    const absl::StatusOr<exl3::quantize::QuantizedLinear> got =
        exl3::quantize::QuantizeLinear(&pool, *gpu, in, o);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->trellis, want->trellis);
    EXPECT_EQ(got->suh, want->suh);
    EXPECT_EQ(got->svh, want->svh);
    EXPECT_EQ(got->bias, want->bias);
    EXPECT_EQ(testing::BitMismatches(got->dequantized, want->dequantized), 0u);
    EXPECT_EQ(got->proxy_error, want->proxy_error);
    EXPECT_EQ(got->global_scale, want->global_scale);
  }
  EXPECT_CUDA_CLEAN();
}

TEST(CudaTileEncoderTest, RefusesDevicesItCannotSeeAndBadArguments) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  for (const int device : {count, -1}) {
    absl::StatusOr<std::unique_ptr<TileEncoder>> missing = NewCudaTileEncoder(device);
    ASSERT_FALSE(missing.ok()) << device;
    EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument) << missing.status();
    EXPECT_NE(missing.status().message().find("cuda:" + std::to_string(device) + ": "),
              std::string::npos)
        << missing.status();
  }
  const std::unique_ptr<TileEncoder> gpu = OpenDevice0();
  ASSERT_NE(gpu, nullptr);
  std::vector<float> t(256, 0.5f), values(256);
  std::vector<uint16_t> states(256);
  EXPECT_EQ(gpu->Encode({9, Codebook::kMul1}, t.data(), 1, states.data(), values.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu->Encode({4, Codebook::kMul1}, nullptr, 1, states.data(), values.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(gpu->Encode({4, Codebook::kMul1}, nullptr, 0, nullptr, nullptr).ok());
}

}  // namespace
}  // namespace twinspan::cuda
