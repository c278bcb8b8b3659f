// The qwen3 family's EXL3 checkpoint on the CUDA backend (its own binary: the checkpoint and
// exllamav3's logits are 64 MB, a GPU call's whole carry, so they travel in a bundle of their own):
//  - exl3_qwen3_tiny against exllamav3 1.4.1's forward of its conversion (shared/golden/README.md
//    sections 2-3): logits rel_fro <= 5e-3 and max_abs <= 0.03, as on the CPU;
//  - CUDA against CPU backend on 150 random tokens, f32 K/V: logits and layer outputs rel_fro
//    <= 1e-5;
//  - on the GPU, bit for bit: verify(k) == k + 1 serial steps, prefill chunking, and ForwardBatch
//    == each sequence alone (tests/unit/target_properties.h), with bf16 and f32 K/V.
// Needs a GPU: scripts/gpu-check.sh runs it (GPU_SET=exl3-target for its bundle).
#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "services/target/target_model.h"
#include "tests/cuda/target_cuda_util.h"
#include "tests/golden/target_golden_util.h"
#include "tests/testing/golden.h"
#include "tests/unit/target_properties.h"

namespace twinspan::target {
namespace {

using testing::ForwardAll;
using testing::Opened;
using testing::OpenOn;
using testing::OpenOnGpu;
using testing::ReferenceFile;
using testing::RelFro;

TEST(TargetCudaTest, Exl3Qwen3MatchesExllamav3Logits) {
  Opened gpu = OpenOnGpu("exl3_qwen3_tiny", cpu::KvDtype::kF32);
  ASSERT_NE(gpu.model, nullptr);
  EXPECT_TRUE(gpu.model->config().exl3);
  ReferenceFile ref(twinspan::testing::GoldenPath("exl3_qwen3_tiny_ref/logits.safetensors"));
  ASSERT_TRUE(ref.ok());
  const ForwardResult r = ForwardAll(*gpu.model, ref.Ids("input_ids"), false);
  const auto expected = ref.Floats("exl3_logits");
  const double err = RelFro(r.logits, expected);
  RecordProperty("exl3_logits_rel_fro", std::to_string(err));
  EXPECT_LE(err, 5e-3);
  EXPECT_LE(testing::MaxAbs(r.logits, expected), 0.03);
}

class TargetCudaCheckpointTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TargetCudaCheckpointTest, CudaBackendMatchesCpuBackend) {
  cpu::ThreadPool pool(2);
  Opened gpu = OpenOnGpu(GetParam(), cpu::KvDtype::kF32);
  Opened cpu_model = OpenOn(cpu::NewCpuBackend(&pool), GetParam(), cpu::KvDtype::kF32);
  ASSERT_NE(gpu.model, nullptr);
  ASSERT_NE(cpu_model.model, nullptr);
  std::mt19937 rng(7);
  const auto ids = testing::RandomTokens(rng, 150, gpu.model->config().vocab_size);
  const ForwardResult g = ForwardAll(*gpu.model, ids, true);
  const ForwardResult c = ForwardAll(*cpu_model.model, ids, true);
  const double err = RelFro(g.logits, c.logits);
  RecordProperty("cuda_vs_cpu_logits_rel_fro", std::to_string(err));
  EXPECT_LE(err, 1e-5);
  EXPECT_LE(RelFro(g.layer_outputs, c.layer_outputs), 1e-5);
}

TEST_P(TargetCudaCheckpointTest, VerifyEqualsSerialStepsBitForBit) {
  for (const cpu::KvDtype kv : {cpu::KvDtype::kBF16, cpu::KvDtype::kF32}) {
    SCOPED_TRACE(kv == cpu::KvDtype::kBF16 ? "bf16 K/V" : "f32 K/V");
    Opened gpu = OpenOnGpu(GetParam(), kv);
    ASSERT_NE(gpu.model, nullptr);
    testing::ExpectVerifyEqualsSerial(*gpu.model, 8, 17);
    testing::ExpectPrefillChunkingInvariant(*gpu.model, 140, 18);
  }
}

TEST_P(TargetCudaCheckpointTest, BatchOfFourEqualsEachSequenceAloneBitForBit) {
  for (const cpu::KvDtype kv : {cpu::KvDtype::kBF16, cpu::KvDtype::kF32}) {
    SCOPED_TRACE(kv == cpu::KvDtype::kBF16 ? "bf16 K/V" : "f32 K/V");
    Opened gpu = OpenOnGpu(GetParam(), kv);
    ASSERT_NE(gpu.model, nullptr);
    testing::ExpectBatchEqualsSolo(*gpu.model, 51);
  }
}

INSTANTIATE_TEST_SUITE_P(Exl3Qwen3, TargetCudaCheckpointTest, ::testing::Values("exl3_qwen3_tiny"));

}  // namespace
}  // namespace twinspan::target
