// What twinspan-synth writes: each tensor's name, dtype, shape and how its values are drawn, and a
// checkpoint as its config.json text, side files and tensor list.
#ifndef TWINSPAN_TOOLS_SYNTH_TENSOR_SPEC_H_
#define TWINSPAN_TOOLS_SYNTH_TENSOR_SPEC_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/safetensors/dtype.h"

namespace twinspan::synth {

// How a tensor's elements are drawn. Every kind gives finite values.
enum class FillKind {
  kUniform,     // U(lo, hi), rounded to the dtype (F32, F16, BF16).
  kSignScale,   // random sign x U(lo, hi) (F16): EXL3's suh / svh.
  kRandomBits,  // uniform raw bits (I16 trellis words, U8 Q4 codes): any trellis is valid EXL3.
  kConstant,    // every element = `value` (I32 codebook markers).
};

struct Fill {
  FillKind kind = FillKind::kUniform;
  float lo = 0.0f;
  float hi = 0.0f;
  int32_t value = 0;
};

struct TensorSpec {
  std::string name;
  DType dtype = DType::kBF16;
  std::vector<int64_t> shape;  // Empty for a 0-dim tensor.
  Fill fill;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t bytes() const { return numel() * static_cast<int64_t>(DTypeSize(dtype)); }
};

struct CheckpointSpec {
  std::string config_json;                   // config.json, byte for byte.
  std::map<std::string, std::string> files;  // Other files beside it (generation_config.json).
  std::vector<TensorSpec> tensors;           // In checkpoint order.
  std::string summary;                       // One line for the log: shape, bits, size.

  int64_t bytes() const {
    int64_t total = 0;
    for (const TensorSpec& t : tensors) total += t.bytes();
    return total;
  }
};

}  // namespace twinspan::synth

#endif  // TWINSPAN_TOOLS_SYNTH_TENSOR_SPEC_H_
