// A Hugging Face model directory's config.json: the text model's fields (unwrapping the Qwen3.5
// multimodal wrapper's "text_config"), quantization_config and dflash_config.
#ifndef TWINSPAN_COMMON_CONFIG_HF_CONFIG_H_
#define TWINSPAN_COMMON_CONFIG_HF_CONFIG_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/dflash_config.h"
#include "common/config/quantization_config.h"
#include "nlohmann/json.hpp"

namespace twinspan {

struct HfConfig {
  nlohmann::json raw;                              // The whole config.json.
  nlohmann::json text;                             // raw["text_config"] when present, else raw.
  std::string path;                                // The config.json read.
  std::string model_type;                          // Top level, e.g. "qwen3_5" for the wrapper.
  std::string text_model_type;                     // text's model_type, e.g. "qwen3_5_text".
  std::vector<std::string> architectures;          // Empty when absent.
  std::optional<QuantizationConfig> quantization;  // Top level, else inside text_config.
  std::optional<DFlashConfig> dflash;              // When "dflash_config" is present.

  // Where a field of `text` lives, for the typed getters' messages: "<path>" or
  // "<path>: text_config".
  std::string text_where() const;
};

// Reads `dir_or_file` (a model directory or its config.json). NotFound when missing;
// InvalidArgument naming the file and key when it is not JSON, not an object, lacks model_type,
// or its quantization_config / dflash_config / text_config is malformed.
absl::StatusOr<HfConfig> LoadHfConfig(const std::string& dir_or_file);

// The same from an already parsed object; `path` is only used in messages.
absl::StatusOr<HfConfig> ParseHfConfig(nlohmann::json raw, const std::string& path);

}  // namespace twinspan

#endif  // TWINSPAN_COMMON_CONFIG_HF_CONFIG_H_
