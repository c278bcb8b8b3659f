// Random Gated DeltaNet inputs shared by the recurrent and chunked GPU tests: qkv ~ N(0, 1),
// gates made by cpu::GatedDeltaNetGates from a ~ N(0, 1) with a per-head decay rate
// exp(a_log), a_log ~ U(lo, hi) (weak decay for lo, hi well below 0), and a state ~ N(0, 0.1).
#ifndef TWINSPAN_TESTS_CUDA_GDN_INPUTS_H_
#define TWINSPAN_TESTS_CUDA_GDN_INPUTS_H_

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/gated_delta_net.h"
#include "tests/cuda/gdn_testing.h"

namespace twinspan::cuda::testing {

struct GdnInputs {
  std::vector<float> qkv, g, beta, state;
};

inline GdnInputs MakeGdnInputs(const cpu::GatedDeltaNetDims& d, int64_t rows, uint32_t seed,
                               float a_log_lo = -4.0f, float a_log_hi = 1.0f) {
  std::mt19937 rng(seed);
  GdnInputs in;
  in.qkv = RandomNormal(rows * d.qkv_width(), 1.0f, rng);
  const std::vector<float> a = RandomNormal(rows * d.v_heads, 1.0f, rng);
  const std::vector<float> b = RandomNormal(rows * d.v_heads, 2.0f, rng);
  const std::vector<float> a_log = RandomUniform(d.v_heads, a_log_lo, a_log_hi, rng);
  const std::vector<float> dt_bias = RandomUniform(d.v_heads, 0.5f, 1.5f, rng);
  in.g.resize(rows * d.v_heads);
  in.beta.resize(rows * d.v_heads);
  EXPECT_TRUE(cpu::GatedDeltaNetGates({}, a.data(), b.data(), d.v_heads, rows, d.v_heads,
                                      a_log.data(), dt_bias.data(), in.g.data(), in.beta.data())
                  .ok());
  in.state = RandomNormal(d.state_size(), 0.1f, rng);
  return in;
}

}  // namespace twinspan::cuda::testing

#endif  // TWINSPAN_TESTS_CUDA_GDN_INPUTS_H_
