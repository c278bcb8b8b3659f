#include "common/config/dflash_config.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/config/json_file.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace twinspan {
namespace {

absl::Status Invalid(std::string_view where, std::string_view key, std::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(where), ": dflash_config \"",
                                                 std::string(key), "\" ", std::string(problem)));
}

absl::StatusOr<std::optional<int64_t>> GetPositive(const nlohmann::json& object,
                                                   std::string_view key, std::string_view where) {
  ABSL_ASSIGN_OR_RETURN(std::optional<int64_t> value, GetOptionalInt(object, key, where));
  if (value.has_value() && *value <= 0) return Invalid(where, key, "must be positive");
  return value;
}

}  // namespace

absl::StatusOr<DFlashConfig> ParseDFlashConfig(const nlohmann::json& dflash_config,
                                               const nlohmann::json& top_level,
                                               std::string_view where) {
  if (!dflash_config.is_object()) return Invalid(where, "", "is not a JSON object");
  const std::string nested = absl::StrCat(std::string(where), ": dflash_config");
  DFlashConfig config;
  ABSL_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> layers,
                        GetOptionalIntList(dflash_config, "target_layer_ids", nested));
  if (!layers.has_value() || layers->empty()) {
    return Invalid(where, "target_layer_ids", "is missing or empty");
  }
  for (int64_t id : *layers) {
    if (id < 0) return Invalid(where, "target_layer_ids", "holds a negative layer id");
  }
  config.target_layer_ids = *layers;
  ABSL_ASSIGN_OR_RETURN(std::optional<int64_t> mask,
                        GetOptionalInt(dflash_config, "mask_token_id", nested));
  if (!mask.has_value() || *mask < 0) return Invalid(where, "mask_token_id", "is missing");
  config.mask_token_id = *mask;
  ABSL_ASSIGN_OR_RETURN(config.block_size, GetPositive(dflash_config, "block_size", nested));
  if (!config.block_size.has_value()) {
    ABSL_ASSIGN_OR_RETURN(config.block_size, GetPositive(top_level, "block_size", where));
  }
  ABSL_ASSIGN_OR_RETURN(config.conv_group_size,
                        GetPositive(dflash_config, "conv_group_size", nested));
  ABSL_ASSIGN_OR_RETURN(config.conv_kernel_size,
                        GetPositive(dflash_config, "conv_kernel_size", nested));
  ABSL_ASSIGN_OR_RETURN(config.selector_rank, GetPositive(dflash_config, "selector_rank", nested));
  ABSL_ASSIGN_OR_RETURN(config.selector_top_k,
                        GetPositive(dflash_config, "selector_top_k", nested));
  return config;
}

}  // namespace twinspan
