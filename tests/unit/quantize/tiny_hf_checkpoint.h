// Tiny HF checkpoints on disk for twinspan-quantize's tests: every linear a multiple of 128 wide
// (EXL3's need), random bf16 weights, so a whole model quantizes in seconds.
#ifndef TWINSPAN_TESTS_UNIT_QUANTIZE_TINY_HF_CHECKPOINT_H_
#define TWINSPAN_TESTS_UNIT_QUANTIZE_TINY_HF_CHECKPOINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/safetensors/writer.h"
#include "nlohmann/json.hpp"

namespace twinspan::quantize::testing {

struct TinyModel {
  nlohmann::ordered_json config;
  std::vector<OwnedTensor> tensors;
};

// qwen3: hidden 128, 2 heads + 2 KV heads of 64, vocab 256, `layers` layers.
TinyModel TinyQwen3(int layers, bool tied, int64_t intermediate = 256);

// qwen3_5_text: a Gated DeltaNet layer (1 key head, 2 value heads of 64) then a gated attention
// layer, keys under model.language_model. (the published layout), head tied to the embedding.
TinyModel TinyQwen35();

// Writes config.json and model.safetensors (and each `extra_files` name with "{}") into a fresh
// folder under the test's temporary directory; returns its path.
std::string WriteTinyModel(const std::string& name, const TinyModel& model,
                           const std::vector<std::string>& extra_files = {});

}  // namespace twinspan::quantize::testing

#endif  // TWINSPAN_TESTS_UNIT_QUANTIZE_TINY_HF_CHECKPOINT_H_
