// The qwen3 family against golden data (shared/golden/README.md):
//  - hf_qwen3_tiny: HF transformers 5.17.0, fp32 on CPU, eager attention (section 5): logits,
//    hidden states, layer outputs and final norm to rel_fro 1e-4; the 16 greedy tokens exactly.
//  - exl3_qwen3_tiny: exllamav3 1.4.1's own forward of its EXL3 conversion (sections 2-3): logits
//    to rel_fro 5e-3 and max_abs 0.03.
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/parallel.h"
#include "services/target/target_model.h"
#include "tests/golden/target_golden_util.h"
#include "tests/testing/golden.h"

namespace twinspan::target {
namespace {

using testing::ReferenceFile;
using testing::RelFro;

std::unique_ptr<TargetModel> OpenOrFail(const std::string& dir, cpu::ThreadPool* pool) {
  TargetOptions options;
  options.pool = pool;
  options.kv_dtype = cpu::KvDtype::kF32;  // bf16 K/V alone exceeds the 1e-4 tolerance.
  options.context = 256;
  auto model = OpenTargetModel(dir, options);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(*model) : nullptr;
}

// HF output_hidden_states: [embedding, layer 0 .. L-2 outputs, final_norm(layer L-1 output)].
std::vector<float> HfHiddenStates(const ForwardResult& r, int64_t layers, int64_t hidden) {
  std::vector<float> out = r.embeddings;
  out.insert(out.end(), r.layer_outputs.begin(),
             r.layer_outputs.begin() + (layers - 1) * r.rows * hidden);
  out.insert(out.end(), r.final_norm.begin(), r.final_norm.end());
  return out;
}

TEST(Qwen3GoldenTest, HfTinyForwardMatchesTransformersFp32) {
  const std::string dir = twinspan::testing::GoldenPath("hf_qwen3_tiny");
  ASSERT_FALSE(dir.empty());
  cpu::ThreadPool pool(2);
  auto model = OpenOrFail(dir + "/model", &pool);
  ASSERT_NE(model, nullptr);
  ReferenceFile ref(dir + "/reference.safetensors");
  ASSERT_TRUE(ref.ok());
  const int64_t layers = model->config().num_layers, hidden = model->config().hidden_size;
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("sequence " + std::to_string(i));
    const auto ids = ref.Ids("input_ids_" + std::to_string(i));
    auto state = model->NewSequence();
    ASSERT_TRUE(state.ok());
    ForwardRequest request;
    request.tokens = ids;
    request.capture_hidden_states = true;
    ForwardResult result;
    ASSERT_TRUE(model->Forward(**state, request, &result).ok());
    const std::string n = std::to_string(i);
    const double logits_err = RelFro(result.logits, ref.Floats("logits_" + n));
    RecordProperty("logits_rel_fro_" + n, std::to_string(logits_err));
    EXPECT_LE(logits_err, 1e-4);
    EXPECT_LE(RelFro(result.layer_outputs, ref.Floats("layer_outputs_" + n)), 1e-4);
    EXPECT_LE(RelFro(result.final_norm, ref.Floats("final_norm_" + n)), 1e-4);
    EXPECT_LE(RelFro(HfHiddenStates(result, layers, hidden), ref.Floats("hidden_states_" + n)),
              1e-4);
  }
}

TEST(Qwen3GoldenTest, HfTinyGreedyGenerationMatchesTransformers) {
  const std::string dir = twinspan::testing::GoldenPath("hf_qwen3_tiny");
  ASSERT_FALSE(dir.empty());
  auto model = OpenOrFail(dir + "/model", nullptr);
  ASSERT_NE(model, nullptr);
  ReferenceFile ref(dir + "/reference.safetensors");
  const auto prompt = ref.Ids("generate_prompt_ids");
  const auto expected = ref.Ids("generate_new_ids");
  const auto step_logits = ref.Floats("generate_step_logits");
  const int64_t vocab = model->config().vocab_size;
  auto state = model->NewSequence();
  ASSERT_TRUE(state.ok());
  auto prefill = Prefill(*model, **state, prompt, 4, {});
  ASSERT_TRUE(prefill.ok()) << prefill.status();
  std::vector<float> logits = prefill->logits;
  std::vector<int32_t> generated;
  std::vector<float> all_logits;
  for (size_t step = 0; step < expected.size(); ++step) {
    all_logits.insert(all_logits.end(), logits.begin(), logits.end());
    const int32_t next =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    generated.push_back(next);
    ForwardRequest request;
    request.tokens = absl::MakeConstSpan(&generated.back(), 1);
    ForwardResult result;
    ASSERT_TRUE(model->Forward(**state, request, &result).ok());
    ASSERT_TRUE(model->Commit(**state, 1).ok());
    logits = result.logits;
  }
  EXPECT_EQ(generated, expected);
  ASSERT_EQ(all_logits.size(), expected.size() * vocab);
  EXPECT_LE(RelFro(all_logits, step_logits), 1e-4);
}

TEST(Qwen3GoldenTest, Exl3TinyMatchesExllamav3Logits) {
  const std::string dir = twinspan::testing::GoldenPath("exl3_qwen3_tiny");
  const std::string ref_dir = twinspan::testing::GoldenPath("exl3_qwen3_tiny_ref");
  ASSERT_FALSE(dir.empty() || ref_dir.empty());
  cpu::ThreadPool pool(2);
  auto model = OpenOrFail(dir, &pool);
  ASSERT_NE(model, nullptr);
  EXPECT_TRUE(model->config().exl3);
  ASSERT_NE(cpu::CpuLinearWeight(model->lm_head()), nullptr);
  EXPECT_TRUE(cpu::CpuLinearWeight(model->lm_head())->is_exl3());
  ReferenceFile ref(ref_dir + "/logits.safetensors");
  const auto ids = ref.Ids("input_ids");
  auto state = model->NewSequence();
  ASSERT_TRUE(state.ok());
  ForwardRequest request;
  request.tokens = ids;
  ForwardResult result;
  ASSERT_TRUE(model->Forward(**state, request, &result).ok());
  const auto expected = ref.Floats("exl3_logits");
  const double exl3_err = RelFro(result.logits, expected);
  RecordProperty("exl3_logits_rel_fro", std::to_string(exl3_err));
  EXPECT_LE(exl3_err, 5e-3);
  EXPECT_LE(testing::MaxAbs(result.logits, expected), 0.03);
  // Sanity only (quantization noise): about 0.15 against HF on the unquantized weights.
  EXPECT_LE(RelFro(result.logits, ref.Floats("hf_fp32_logits")), 0.3);

  // Threads split EXL3 linears into column views: the same bits as one thread.
  auto single = OpenOrFail(dir, nullptr);
  ASSERT_NE(single, nullptr);
  auto single_state = single->NewSequence();
  ForwardResult single_result;
  ASSERT_TRUE(single->Forward(**single_state, request, &single_result).ok());
  ASSERT_EQ(single_result.logits.size(), result.logits.size());
  EXPECT_EQ(std::memcmp(single_result.logits.data(), result.logits.data(),
                        result.logits.size() * sizeof(float)),
            0);
}

}  // namespace
}  // namespace twinspan::target
