// Helpers for the GPU tests of the target families: a golden checkpoint opened on a backend, one
// whole-prompt forward, and the checks every checkpoint's GPU test makes.
#ifndef TWINSPAN_TESTS_CUDA_TARGET_CUDA_UTIL_H_
#define TWINSPAN_TESTS_CUDA_TARGET_CUDA_UTIL_H_

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/cuda_backend.h"
#include "services/target/target_model.h"
#include "tests/golden/target_golden_util.h"
#include "tests/testing/golden.h"
#include "tests/unit/target_properties.h"

namespace twinspan::target::testing {

// A model and the backend it runs on; the model goes first.
struct Opened {
  std::unique_ptr<backend::Backend> backend;
  std::unique_ptr<TargetModel> model;
};

inline Opened OpenOn(std::unique_ptr<backend::Backend> be, const std::string& relative,
                     cpu::KvDtype kv_dtype) {
  Opened o;
  o.backend = std::move(be);
  const std::string dir = twinspan::testing::GoldenPath(relative);
  if (dir.empty() || o.backend == nullptr) return o;
  TargetOptions options;
  options.backend = o.backend.get();
  options.kv_dtype = kv_dtype;
  options.context = 256;
  auto model = OpenTargetModel(dir, options);
  EXPECT_TRUE(model.ok()) << model.status();
  if (model.ok()) o.model = std::move(*model);
  return o;
}

inline std::unique_ptr<backend::Backend> Cuda() {
  auto be = cuda::NewCudaBackend({});
  EXPECT_TRUE(be.ok()) << be.status();
  return be.ok() ? std::move(*be) : nullptr;
}

inline Opened OpenOnGpu(const std::string& relative, cpu::KvDtype kv_dtype) {
  return OpenOn(Cuda(), relative, kv_dtype);
}

inline ForwardResult ForwardAll(const TargetModel& model, const std::vector<int32_t>& ids,
                                bool capture) {
  auto state = model.NewSequence();
  EXPECT_TRUE(state.ok()) << state.status();
  ForwardRequest request;
  request.tokens = ids;
  request.capture_hidden_states = capture;
  ForwardResult result;
  if (state.ok()) {
    const absl::Status s = model.Forward(**state, request, &result);
    EXPECT_TRUE(s.ok()) << s;
  }
  return result;
}

// CUDA against CPU for an EXL3 checkpoint: the EXL3 linear's per-linear 3.4e-7 compounds through
// 150 tokens (H200: 7.4e-4 qwen3_5, 3.8e-4 qwen3), inside exllamav3's own 5e-3 against the CPU.
inline constexpr double kExl3CudaVsCpuTolerance = 3e-3;

// CUDA against CPU backend on 150 random tokens, f32 K/V: logits and layer outputs within
// `tolerance` (rel_fro).
inline void ExpectCudaMatchesCpu(const std::string& relative, double tolerance) {
  cpu::ThreadPool pool(2);
  Opened gpu = OpenOnGpu(relative, cpu::KvDtype::kF32);
  Opened cpu_model = OpenOn(cpu::NewCpuBackend(&pool), relative, cpu::KvDtype::kF32);
  ASSERT_NE(gpu.model, nullptr);
  ASSERT_NE(cpu_model.model, nullptr);
  std::mt19937 rng(7);
  const auto ids = RandomTokens(rng, 150, gpu.model->config().vocab_size);
  const ForwardResult g = ForwardAll(*gpu.model, ids, true);
  const ForwardResult c = ForwardAll(*cpu_model.model, ids, true);
  const double err = RelFro(g.logits, c.logits);
  ::testing::Test::RecordProperty("cuda_vs_cpu_logits_rel_fro", std::to_string(err));
  EXPECT_LE(err, tolerance);
  EXPECT_LE(RelFro(g.layer_outputs, c.layer_outputs), tolerance);
}

// On the GPU, bit for bit, with bf16 and f32 K/V: verify(k) == k + 1 serial steps (k = 1..8) and
// prefill chunking (tests/unit/target_properties.h).
inline void ExpectGpuVerifyEqualsSerial(const std::string& relative) {
  for (const cpu::KvDtype kv : {cpu::KvDtype::kBF16, cpu::KvDtype::kF32}) {
    SCOPED_TRACE(kv == cpu::KvDtype::kBF16 ? "bf16 K/V" : "f32 K/V");
    Opened gpu = OpenOnGpu(relative, kv);
    ASSERT_NE(gpu.model, nullptr);
    ExpectVerifyEqualsSerial(*gpu.model, 8, 17);
    ExpectPrefillChunkingInvariant(*gpu.model, 140, 18);
  }
}

// On the GPU, bit for bit, with bf16 and f32 K/V: one ForwardBatch of four sequences == each
// sequence's own Forward (tests/unit/target_properties.h).
inline void ExpectGpuBatchEqualsSolo(const std::string& relative) {
  for (const cpu::KvDtype kv : {cpu::KvDtype::kBF16, cpu::KvDtype::kF32}) {
    SCOPED_TRACE(kv == cpu::KvDtype::kBF16 ? "bf16 K/V" : "f32 K/V");
    Opened gpu = OpenOnGpu(relative, kv);
    ASSERT_NE(gpu.model, nullptr);
    ExpectBatchEqualsSolo(*gpu.model, 51);
  }
}

}  // namespace twinspan::target::testing

#endif  // TWINSPAN_TESTS_CUDA_TARGET_CUDA_UTIL_H_
