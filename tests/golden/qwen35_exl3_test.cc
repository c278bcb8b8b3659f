// The Qwen3.5 family on a real EXL3 conversion (golden/exl3_qwen3_5_tiny) against exllamav3's own
// logits: the model_type qwen3_5_text tree under model.language_model., EXL3 K=4 linears, plain F16
// in_proj_a / in_proj_b, bf16 conv / A_log / dt_bias / norms, and a K=6 lm_head at the root.
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/safetensors/checkpoint.h"
#include "gtest/gtest.h"
#include "kernels/cpu/parallel.h"
#include "services/target/target_model.h"
#include "tests/testing/golden.h"

namespace twinspan::target {
namespace {

double RelFro(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += double(want[i]) * want[i];
  }
  return std::sqrt(diff / norm);
}

TEST(Qwen35Exl3GoldenTest, LogitsMatchExllamav3) {
  const std::string model_dir = twinspan::testing::GoldenPath("exl3_qwen3_5_tiny");
  const std::string ref_dir = twinspan::testing::GoldenPath("exl3_qwen3_5_tiny_ref");
  ASSERT_FALSE(model_dir.empty() || ref_dir.empty());
  auto ref = Checkpoint::Open(ref_dir + "/logits.safetensors");
  ASSERT_TRUE(ref.ok()) << ref.status();
  cpu::ThreadPool pool(2);
  TargetOptions options;
  options.pool = &pool;
  options.context = 128;
  auto model = OpenTargetModel(model_dir, options);
  ASSERT_TRUE(model.ok()) << model.status();
  for (int s = 0; s < 3; ++s) {
    SCOPED_TRACE(absl::StrCat("sequence ", s));
    auto ids_view = (*ref)->Get(absl::StrCat("input_ids_", s));
    auto want_view = (*ref)->Get(absl::StrCat("exl3_logits_", s));
    ASSERT_TRUE(ids_view.ok() && want_view.ok());
    auto ids64 = ToInt64(*ids_view);
    auto want = ToFloat(*want_view);
    ASSERT_TRUE(ids64.ok() && want.ok());
    const std::vector<int32_t> ids(ids64->begin(), ids64->end());
    auto state = (*model)->NewSequence();
    ASSERT_TRUE(state.ok()) << state.status();
    ForwardRequest request;
    request.tokens = ids;
    ForwardResult result;
    ASSERT_TRUE((*model)->Forward(**state, request, &result).ok());
    ASSERT_EQ(result.logits.size(), want->size());
    EXPECT_LE(RelFro(result.logits, *want), 3e-2);
  }
}

// The EXL3 linears keep the family row-invariant: one forward equals token-by-token decoding.
TEST(Qwen35Exl3GoldenTest, TokenByTokenEqualsOneForwardBitForBit) {
  const std::string model_dir = twinspan::testing::GoldenPath("exl3_qwen3_5_tiny");
  ASSERT_FALSE(model_dir.empty());
  TargetOptions options;
  options.context = 64;
  auto model = OpenTargetModel(model_dir, options);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<int32_t> ids = {256, 84, 104, 101, 32, 113, 117, 105, 99, 107, 258, 10};
  auto whole = (*model)->NewSequence();
  auto steps = (*model)->NewSequence();
  ASSERT_TRUE(whole.ok() && steps.ok());
  ForwardRequest request;
  request.tokens = ids;
  ForwardResult all;
  ASSERT_TRUE((*model)->Forward(**whole, request, &all).ok());
  const int64_t vocab = (*model)->config().vocab_size;
  for (size_t r = 0; r < ids.size(); ++r) {
    ForwardRequest one;
    one.tokens = absl::MakeConstSpan(&ids[r], 1);
    ForwardResult step;
    ASSERT_TRUE((*model)->Forward(**steps, one, &step).ok());
    ASSERT_TRUE((*model)->Commit(**steps, 1).ok());
    EXPECT_EQ(0, std::memcmp(step.logits.data(), &all.logits[r * vocab], vocab * sizeof(float)))
        << "row " << r;
  }
}

}  // namespace
}  // namespace twinspan::target
