// config.json's "quantization_config" (written by exllamav3's converter for EXL3 checkpoints).
#ifndef TWINSPAN_COMMON_CONFIG_QUANTIZATION_CONFIG_H_
#define TWINSPAN_COMMON_CONFIG_QUANTIZATION_CONFIG_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace twinspan {

// Informational: EXL3 loading reads K and the codebook per tensor, never from here.
struct QuantizationConfig {
  std::string quant_method;             // "exl3", ...
  std::string version;                  // Version of the tool that wrote it; "" when absent.
  std::optional<double> bits;           // Average bits per weight of the decoder linears.
  std::optional<int> head_bits;         // K of lm_head (16 = unquantized).
  std::optional<int> mtp_bits;          // K of MTP layers (exllamav3 1.4.2+).
  std::optional<std::string> codebook;  // "mul1", "mcg" or "3inst".
  nlohmann::json raw;                   // The whole object, for fields not modelled here.
};

// Parses `object`. InvalidArgument naming `where` and the key for a missing quant_method, a field
// of the wrong type, head_bits/mtp_bits outside 1..8 and not 16, or an unknown codebook name.
absl::StatusOr<QuantizationConfig> ParseQuantizationConfig(const nlohmann::json& object,
                                                           std::string_view where);

}  // namespace twinspan

#endif  // TWINSPAN_COMMON_CONFIG_QUANTIZATION_CONFIG_H_
