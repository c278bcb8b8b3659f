// Synthetic EXL3 linears for host tests: random trellis bits (every bit string is a valid
// encoding), random fp16 scales, optional bias and codebook marker, written as safetensors.
#ifndef TWINSPAN_TESTS_UNIT_FORMATS_EXL3_FIXTURE_H_
#define TWINSPAN_TESTS_UNIT_FORMATS_EXL3_FIXTURE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/exl3/format.h"
#include "common/safetensors/checkpoint.h"
#include "common/safetensors/writer.h"

namespace twinspan::testing {

struct SyntheticLinear {
  std::string prefix = "lin";
  int64_t k = 256;
  int64_t n = 384;
  int bits = 3;
  exl3::Codebook codebook = exl3::Codebook::kMul1;
  bool bias = false;
  uint32_t seed = 1;
};

// prefix.trellis I16 [k/16, n/16, 16*bits], .suh F16 [k], .svh F16 [n], the marker, .bias F16 [n].
std::vector<OwnedTensor> SyntheticTensors(const SyntheticLinear& spec);

// Writes `tensors` to <test tmp>/<file_name> and returns that path.
std::string WriteTensors(const std::string& file_name, const std::vector<OwnedTensor>& tensors);

// Writes and opens; fails the test (returns null) on error.
std::unique_ptr<Checkpoint> OpenTensors(const std::string& file_name,
                                        const std::vector<OwnedTensor>& tensors);

// Random activations in [-2, 2).
std::vector<float> RandomRows(int64_t rows, int64_t cols, uint32_t seed);

}  // namespace twinspan::testing

#endif  // TWINSPAN_TESTS_UNIT_FORMATS_EXL3_FIXTURE_H_
