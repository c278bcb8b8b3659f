// CudaLogitsSampler (services/device) against the host LogitsSampler, i.e. sampler::KeyedSampler:
// the same logits in the CUDA backend's memory give the same ids, bit for bit (ids are exact; the
// kernel's one documented way to differ needs a draw within ~1e-10 of a boundary, which random
// logits do not hit), for 1 to 130 rows (several launches), greedy and every filter, NaN rows
// marked -1 like the host sampler; the ids vector is poisoned first. Bad input: another backend's
// buffer, too few logits, bad parameters. Structured output's masks (cuda::MaskLogits) give the
// host sampler's ids over cpu::MaskLogits' rows, and the masked logits equal the CPU's bit for bit.
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/mask_logits.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/mask_logits.cuh"
#include "services/device/cuda_logits_sampler.h"
#include "services/device/logits_sampler.h"
#include "tests/cuda/cuda_test_util.h"

namespace twinspan::device {
namespace {

std::vector<RowDraw> Draws(int64_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<RowDraw> draws(rows);
  for (int64_t r = 0; r < rows; ++r) {
    RowDraw& d = draws[r];
    switch (r % 6) {
      case 0:
        d.params.temperature = 0.0f;
        break;  // greedy
      case 1:
        d.params.temperature = 1.0f;
        break;
      case 2:
        d.params.temperature = 0.7f;
        d.params.top_k = 1 + static_cast<int>(rng() % 50);
        break;
      case 3:
        d.params.temperature = 1.3f;
        d.params.top_p = 0.9f;
        break;
      case 4:
        d.params.temperature = 0.8f;
        d.params.min_p = 0.1f;
        break;
      default:
        d.params.temperature = 0.6f;
        d.params.top_k = 40;
        d.params.top_p = 0.95f;
        d.params.min_p = 0.02f;
    }
    d.seed = rng();
    d.position = static_cast<int64_t>(rng() % 100000);
  }
  return draws;
}

class CudaLogitsSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backend = cuda::NewCudaBackend({});
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = std::move(*backend);
    auto sampler = CudaLogitsSampler::Create(0);
    ASSERT_TRUE(sampler.ok()) << sampler.status();
    sampler_ = std::move(*sampler);
  }

  std::unique_ptr<backend::Backend> backend_;
  std::unique_ptr<CudaLogitsSampler> sampler_;
  HostLogitsSampler host_;
  std::unique_ptr<backend::Backend> cpu_ = cpu::NewCpuBackend(nullptr);
};

TEST_F(CudaLogitsSamplerTest, DrawsTheHostSamplersIdsForEveryRowCount) {
  for (const int64_t vocab : {512, 4096, 151936}) {
    for (const int64_t rows : {1, 7, 64, 65, 130}) {
      SCOPED_TRACE(::testing::Message() << "vocab " << vocab << ", rows " << rows);
      std::vector<float> logits = cuda::testing::RandomFloats(rows * vocab, 7 * rows + vocab, 8.0f);
      const std::vector<RowDraw> draws = Draws(rows, 11 * rows + vocab);
      auto on_gpu = backend_->UploadFloats(logits);
      auto on_cpu = cpu_->UploadFloats(logits);
      ASSERT_TRUE(on_gpu.ok() && on_cpu.ok());
      std::vector<int32_t> got(rows + 3, -7), want;
      ASSERT_TRUE(sampler_->Sample(*backend_, **on_gpu, vocab, draws, &got).ok());
      EXPECT_CUDA_CLEAN();
      ASSERT_TRUE(host_.Sample(*cpu_, **on_cpu, vocab, draws, &want).ok());
      ASSERT_EQ(got.size(), want.size());
      for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(got[r], want[r]) << "row " << r;
    }
  }
}

TEST_F(CudaLogitsSamplerTest, ANaNRowIsMarkedAndTheOthersStillDrawn) {
  const int64_t vocab = 1000, rows = 5;
  std::vector<float> logits = cuda::testing::RandomFloats(rows * vocab, 5, 4.0f);
  logits[2 * vocab + 999] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<RowDraw> draws = Draws(rows, 6);
  auto on_gpu = backend_->UploadFloats(logits);
  auto on_cpu = cpu_->UploadFloats(logits);
  ASSERT_TRUE(on_gpu.ok() && on_cpu.ok());
  std::vector<int32_t> got, want;
  ASSERT_TRUE(sampler_->Sample(*backend_, **on_gpu, vocab, draws, &got).ok());
  ASSERT_TRUE(host_.Sample(*cpu_, **on_cpu, vocab, draws, &want).ok());
  EXPECT_EQ(got, want);
  EXPECT_EQ(got[2], -1);
}

TEST_F(CudaLogitsSamplerTest, RefusesBadInput) {
  const int64_t vocab = 100;
  std::vector<float> logits = cuda::testing::RandomFloats(2 * vocab, 9, 1.0f);
  auto on_gpu = backend_->UploadFloats(logits);
  auto on_cpu = cpu_->UploadFloats(logits);
  ASSERT_TRUE(on_gpu.ok() && on_cpu.ok());
  std::vector<int32_t> got;
  const std::vector<RowDraw> two = Draws(2, 1), three = Draws(3, 1);
  EXPECT_TRUE(absl::IsInvalidArgument(sampler_->Sample(*cpu_, **on_cpu, vocab, two, &got)));
  EXPECT_TRUE(absl::IsInvalidArgument(sampler_->Sample(*backend_, **on_gpu, vocab, three, &got)));
  std::vector<RowDraw> bad = two;
  bad[1].params.top_p = 0.0f;
  const absl::Status status = sampler_->Sample(*backend_, **on_gpu, vocab, bad, &got);
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("row 1"), std::string::npos) << status;
  EXPECT_TRUE(absl::IsInvalidArgument(CudaLogitsSampler::Create(4096).status()));
  EXPECT_CUDA_CLEAN();
}

// Masks with a few allowed ids per row (a grammar's usual case) and half the rows unmasked.
std::vector<uint32_t> SparseMasks(int64_t rows, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t words = cpu::MaskWords(vocab);
  std::vector<uint32_t> masks(rows * words, 0u);
  for (int64_t r = 0; r < rows; ++r) {
    for (int k = 0; k < 1 + r % 40; ++k) {
      const int64_t id = static_cast<int64_t>(rng() % vocab);
      masks[r * words + id / 32] |= 1u << (id % 32);
    }
  }
  return masks;
}

TEST_F(CudaLogitsSamplerTest, MaskedRowsDrawTheHostSamplersIds) {
  for (const int64_t vocab : {512, 151936}) {
    for (const int64_t rows : {1, 9, 130}) {
      SCOPED_TRACE(::testing::Message() << "vocab " << vocab << ", rows " << rows);
      const int64_t words = cpu::MaskWords(vocab);
      std::vector<float> logits = cuda::testing::RandomFloats(rows * vocab, 3 * rows + vocab, 8.0f);
      const std::vector<uint32_t> masks = SparseMasks(rows, vocab, 17 * rows);
      std::vector<RowDraw> draws = Draws(rows, 13 * rows + vocab);
      for (int64_t r = 0; r < rows; r += 2) {
        draws[r].allowed = absl::MakeConstSpan(masks).subspan(r * words, words);
      }
      auto on_gpu = backend_->UploadFloats(logits);
      auto on_cpu = cpu_->UploadFloats(logits);
      ASSERT_TRUE(on_gpu.ok() && on_cpu.ok());
      std::vector<int32_t> got, want;
      ASSERT_TRUE(sampler_->Sample(*backend_, **on_gpu, vocab, draws, &got).ok());
      EXPECT_CUDA_CLEAN();
      ASSERT_TRUE(host_.Sample(*cpu_, **on_cpu, vocab, draws, &want).ok());
      ASSERT_EQ(got, want);
      for (int64_t r = 0; r < rows; r += 2) {
        ASSERT_GE(got[r], 0);
        EXPECT_TRUE((masks[r * words + got[r] / 32] >> (got[r] % 32)) & 1u) << "row " << r;
      }
    }
  }
}

TEST_F(CudaLogitsSamplerTest, MaskLogitsEqualsTheCpuOpBitForBit) {
  const int64_t vocab = 4099, stride = 4104, rows = 5;
  std::vector<float> logits = cuda::testing::RandomFloats(rows * stride, 21, 5.0f);
  const std::vector<uint32_t> masks = SparseMasks(rows, vocab, 23);
  auto on_gpu = backend_->UploadFloats(logits);
  ASSERT_TRUE(on_gpu.ok());
  void* device_masks = nullptr;
  ASSERT_EQ(cudaMalloc(&device_masks, masks.size() * sizeof(uint32_t)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(device_masks, masks.data(), masks.size() * sizeof(uint32_t),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  cuda::Context ctx;
  ASSERT_TRUE(cuda::MaskLogits(ctx, (*on_gpu)->floats(), stride, vocab,
                               static_cast<const uint32_t*>(device_masks), rows)
                  .ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> got(rows * stride);
  ASSERT_TRUE(backend_->Download(got.data(), **on_gpu, 0, got.size() * sizeof(float)).ok());
  std::vector<float> want = logits;
  ASSERT_TRUE(cpu::MaskLogits({}, want.data(), stride, vocab, masks.data(), rows).ok());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
  EXPECT_TRUE(
      absl::IsInvalidArgument(cuda::MaskLogits(ctx, (*on_gpu)->floats(), vocab - 1, vocab,
                                               static_cast<const uint32_t*>(device_masks), rows)));
  cudaFree(device_masks);
  EXPECT_CUDA_CLEAN();
}

}  // namespace
}  // namespace twinspan::device
