// Writes the EXL3 checkpoint folder (exl3-format.md sections 1.1 to 1.3): model.safetensors with
// the quantized linears as .trellis / .suh / .svh / codebook marker (+ .bias) and every other
// tensor as the source holds it (in_proj_a / in_proj_b as F16), config.json with
// quantization_config, quantization_config.json with the per-module tensor_storage index, and the
// tokenizer, generation and chat template files copied.
#ifndef TWINSPAN_TOOLS_QUANTIZE_EXL3_WRITER_H_
#define TWINSPAN_TOOLS_QUANTIZE_EXL3_WRITER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/exl3/quantize/quantize_linear.h"
#include "common/safetensors/checkpoint.h"
#include "common/safetensors/writer.h"
#include "nlohmann/json.hpp"
#include "tools/quantize/model_plan.h"

namespace twinspan::quantize {

struct Exl3Output {
  const Checkpoint* source = nullptr;
  const ModelPlan* plan = nullptr;
  // Every linear of plan->linears by prefix.
  const std::map<std::string, exl3::quantize::QuantizedLinear>* quantized = nullptr;
  std::string source_dir;                      // For config.json and the files copied.
  std::string out_dir;                         // An existing, empty folder.
  nlohmann::ordered_json quantization_config;  // Without tensor_storage.
};

// The tensors of the output, sorted by name. InvalidArgument naming a tensor that cannot be
// converted (in_proj_a/b not float).
absl::StatusOr<std::vector<OwnedTensor>> OutputTensors(const Exl3Output& out);

// Writes the folder. Errors from the reader, the writer and file copies, naming the file.
absl::Status WriteExl3Checkpoint(const Exl3Output& out);

// tensor_storage as exllamav3 writes it: for each module (a tensor name up to its last '.'; an
// EXL3 linear's prefix), {"stored_tensors": {name: {shape, n_bytes, dtype "torch.<type>"}}}, plus
// quant_format "exl3", bits_per_weight and the codebook multiplier for EXL3 linears.
nlohmann::ordered_json TensorStorage(const std::vector<OwnedTensor>& tensors);

}  // namespace twinspan::quantize

#endif  // TWINSPAN_TOOLS_QUANTIZE_EXL3_WRITER_H_
