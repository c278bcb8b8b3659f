// ForwardBatch on the golden checkpoints (shared/golden/README.md: HF transformers' tiny qwen3 and
// qwen3_5 models, and exllamav3 1.4.1's EXL3 conversions of them): one forward over four
// sequences' windows equals each sequence's own Forward bit for bit, for real dense and EXL3
// weights of both families.
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/parallel.h"
#include "services/target/target_model.h"
#include "tests/testing/golden.h"
#include "tests/unit/target_properties.h"

namespace twinspan::target {
namespace {

class TargetBatchGoldenTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TargetBatchGoldenTest, BatchEqualsEachSequencesOwnForward) {
  const std::string dir = twinspan::testing::GoldenPath(GetParam());
  ASSERT_FALSE(dir.empty());
  cpu::ThreadPool pool(2);
  auto be = cpu::NewCpuBackend(&pool);
  TargetOptions options;
  options.backend = be.get();
  options.context = 256;
  auto model = OpenTargetModel(dir, options);
  ASSERT_TRUE(model.ok()) << model.status();
  testing::ExpectBatchEqualsSolo(**model, 51);
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, TargetBatchGoldenTest,
                         ::testing::Values("hf_qwen3_tiny/model", "hf_qwen3_5_tiny/model",
                                           "exl3_qwen3_tiny", "exl3_qwen3_5_tiny"));

}  // namespace
}  // namespace twinspan::target
