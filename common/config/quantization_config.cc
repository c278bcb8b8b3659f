#include "common/config/quantization_config.h"

#include "absl/strings/str_cat.h"
#include "common/config/json_file.h"
#include "common/status.h"

namespace twinspan {
namespace {

absl::StatusOr<std::optional<int>> GetBits(const nlohmann::json& object, std::string_view key,
                                           std::string_view where) {
  ABSL_ASSIGN_OR_RETURN(std::optional<int64_t> bits, GetOptionalInt(object, key, where));
  if (!bits.has_value()) return std::optional<int>();
  if ((*bits < 1 || *bits > 8) && *bits != 16) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(where), ": \"", std::string(key),
                                                   "\" is ", *bits, ", expected 1..8 or 16"));
  }
  return std::optional<int>(static_cast<int>(*bits));
}

}  // namespace

absl::StatusOr<QuantizationConfig> ParseQuantizationConfig(const nlohmann::json& object,
                                                           std::string_view where) {
  if (!object.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(where), ": not a JSON object"));
  }
  QuantizationConfig config;
  config.raw = object;
  absl::StatusOr<std::string> method = GetString(object, "quant_method", where);
  if (!method.ok()) return absl::InvalidArgumentError(method.status().message());
  config.quant_method = *method;
  ABSL_ASSIGN_OR_RETURN(std::optional<std::string> version,
                        GetOptionalString(object, "version", where));
  config.version = version.value_or("");
  ABSL_ASSIGN_OR_RETURN(config.bits, GetOptionalDouble(object, "bits", where));
  ABSL_ASSIGN_OR_RETURN(config.head_bits, GetBits(object, "head_bits", where));
  ABSL_ASSIGN_OR_RETURN(config.mtp_bits, GetBits(object, "mtp_bits", where));
  ABSL_ASSIGN_OR_RETURN(config.codebook, GetOptionalString(object, "codebook", where));
  if (config.codebook.has_value() && *config.codebook != "mul1" && *config.codebook != "mcg" &&
      *config.codebook != "3inst") {
    return absl::InvalidArgumentError(absl::StrCat(std::string(where), ": \"codebook\" is \"",
                                                   *config.codebook,
                                                   "\", expected mul1, mcg or 3inst"));
  }
  return config;
}

}  // namespace twinspan
