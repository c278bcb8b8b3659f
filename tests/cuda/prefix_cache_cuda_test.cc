// The target's prefix cache on the CUDA backend: a prefill resumed after a cached prefix gives the
// logits and taps of a fresh prefill bit for bit (and so do the verifies after it), for both
// families, on the golden tiny checkpoints (qwen3 bf16, qwen3_5 EXL3) and on random tiny models.
// Needs a GPU: scripts/gpu-check.sh runs it.
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/cuda/target_cuda_util.h"
#include "tests/testing/golden.h"
#include "tests/unit/target_prefix_properties.h"
#include "tests/unit/target_random_model.h"
#include "tests/unit/target_random_qwen35.h"

namespace twinspan::target::testing {
namespace {

// Room for the property's longest prompt (290 tokens) and the decode after it.
constexpr int64_t kContext = 320;

TargetOptions OnGpu(backend::Backend* be) {
  TargetOptions options;
  options.backend = be;
  options.context = kContext;
  return options;
}

class PrefixCacheCudaTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PrefixCacheCudaTest, ResumedEqualsFreshOnAGoldenCheckpoint) {
  const std::string dir = twinspan::testing::GoldenPath(GetParam());
  ASSERT_FALSE(dir.empty());
  auto be = Cuda();
  ASSERT_NE(be, nullptr);
  auto model = OpenTargetModel(dir, OnGpu(be.get()));
  ASSERT_TRUE(model.ok()) << model.status();
  ExpectPrefixReuseExact(**model, 11);
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, PrefixCacheCudaTest,
                         ::testing::Values("hf_qwen3_tiny/model", "exl3_qwen3_5_tiny"));

TEST(PrefixCacheCudaTest, ResumedEqualsFreshOnRandomModelsOfBothFamilies) {
  auto be = Cuda();
  ASSERT_NE(be, nullptr);
  auto qwen3 = RandomQwen3Model(OnGpu(be.get()), 41);
  ASSERT_NE(qwen3, nullptr);
  ExpectPrefixReuseExact(*qwen3, 12);
  const TargetConfig config = TinyQwen35Config();
  auto qwen35 = Qwen35Model::Create(config, RandomQwen35Weights(config, 42), OnGpu(be.get()));
  ASSERT_TRUE(qwen35.ok()) << qwen35.status();
  ExpectPrefixReuseExact(**qwen35, 13);
}

}  // namespace
}  // namespace twinspan::target::testing
