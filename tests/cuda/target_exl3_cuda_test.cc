// The qwen3 family's EXL3 checkpoint on the CUDA backend (its own binary: the checkpoint and
// exllamav3's logits are 64 MB, a GPU call's whole carry, so they travel in a bundle of their own):
//  - exl3_qwen3_tiny against exllamav3 1.4.1's forward of its conversion (shared/golden/README.md
//    sections 2-3): logits rel_fro <= 5e-3 and max_abs <= 0.03, as on the CPU;
//  - CUDA against CPU backend on 150 random tokens, f32 K/V: logits and layer outputs rel_fro
//    <= 3e-3 (kExl3CudaVsCpuTolerance);
//  - on the GPU, bit for bit: verify(k) == k + 1 serial steps, prefill chunking, and ForwardBatch
//    == each sequence alone (tests/unit/target_properties.h), with bf16 and f32 K/V.
// Needs a GPU: scripts/gpu-check.sh runs it (ONLY=target_exl3_cuda_test SKIP= for its bundle).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "services/target/target_model.h"
#include "tests/cuda/target_cuda_util.h"
#include "tests/golden/target_golden_util.h"
#include "tests/testing/golden.h"

namespace twinspan::target {
namespace {

TEST(TargetCudaTest, Exl3Qwen3MatchesExllamav3Logits) {
  testing::Opened gpu = testing::OpenOnGpu("exl3_qwen3_tiny", cpu::KvDtype::kF32);
  ASSERT_NE(gpu.model, nullptr);
  EXPECT_TRUE(gpu.model->config().exl3);
  testing::ReferenceFile ref(
      twinspan::testing::GoldenPath("exl3_qwen3_tiny_ref/logits.safetensors"));
  ASSERT_TRUE(ref.ok());
  const ForwardResult r = testing::ForwardAll(*gpu.model, ref.Ids("input_ids"), false);
  const auto expected = ref.Floats("exl3_logits");
  const double err = testing::RelFro(r.logits, expected);
  RecordProperty("exl3_logits_rel_fro", std::to_string(err));
  EXPECT_LE(err, 5e-3);
  EXPECT_LE(testing::MaxAbs(r.logits, expected), 0.03);
}

class TargetCudaCheckpointTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TargetCudaCheckpointTest, CudaBackendMatchesCpuBackend) {
  testing::ExpectCudaMatchesCpu(GetParam(), testing::kExl3CudaVsCpuTolerance);
}

TEST_P(TargetCudaCheckpointTest, VerifyEqualsSerialStepsBitForBit) {
  testing::ExpectGpuVerifyEqualsSerial(GetParam());
}

TEST_P(TargetCudaCheckpointTest, BatchOfFourEqualsEachSequenceAloneBitForBit) {
  testing::ExpectGpuBatchEqualsSolo(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Exl3Qwen3, TargetCudaCheckpointTest, ::testing::Values("exl3_qwen3_tiny"));

}  // namespace
}  // namespace twinspan::target
