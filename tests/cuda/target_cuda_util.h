// Helpers for the GPU tests of the target families: a golden checkpoint opened on a backend, and
// one whole-prompt forward.
#ifndef TWINSPAN_TESTS_CUDA_TARGET_CUDA_UTIL_H_
#define TWINSPAN_TESTS_CUDA_TARGET_CUDA_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cuda/cuda_backend.h"
#include "services/target/target_model.h"
#include "tests/testing/golden.h"

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

}  // namespace twinspan::target::testing

#endif  // TWINSPAN_TESTS_CUDA_TARGET_CUDA_UTIL_H_
