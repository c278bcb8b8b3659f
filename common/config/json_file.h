// Reading JSON files and typed fields from them, with errors that name the file and the key.
#ifndef TWINSPAN_COMMON_CONFIG_JSON_FILE_H_
#define TWINSPAN_COMMON_CONFIG_JSON_FILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace twinspan {

// Parses the whole file. NotFound when it does not exist; InvalidArgument naming the path (and
// the byte offset) when it is not valid JSON. Never throws.
absl::StatusOr<nlohmann::json> LoadJsonFile(const std::string& path);

// Typed getters. `where` names the object for messages, e.g. "model/config.json" or
// "model/config.json: quantization_config". Required getters return NotFound when `key` is absent
// (or null); all return InvalidArgument naming `where` and `key` when the value has the wrong type
// or does not fit. Optional getters return nullopt for an absent or null key.
absl::StatusOr<std::string> GetString(const nlohmann::json& object, std::string_view key,
                                      std::string_view where);
absl::StatusOr<int64_t> GetInt(const nlohmann::json& object, std::string_view key,
                               std::string_view where);
absl::StatusOr<double> GetDouble(const nlohmann::json& object, std::string_view key,
                                 std::string_view where);  // Integers are accepted.
absl::StatusOr<bool> GetBool(const nlohmann::json& object, std::string_view key,
                             std::string_view where);
absl::StatusOr<std::vector<int64_t>> GetIntList(const nlohmann::json& object, std::string_view key,
                                                std::string_view where);

absl::StatusOr<std::optional<std::string>> GetOptionalString(const nlohmann::json& object,
                                                             std::string_view key,
                                                             std::string_view where);
absl::StatusOr<std::optional<int64_t>> GetOptionalInt(const nlohmann::json& object,
                                                      std::string_view key, std::string_view where);
absl::StatusOr<std::optional<double>> GetOptionalDouble(const nlohmann::json& object,
                                                        std::string_view key,
                                                        std::string_view where);
absl::StatusOr<std::optional<bool>> GetOptionalBool(const nlohmann::json& object,
                                                    std::string_view key, std::string_view where);
absl::StatusOr<std::optional<std::vector<int64_t>>> GetOptionalIntList(const nlohmann::json& object,
                                                                       std::string_view key,
                                                                       std::string_view where);

}  // namespace twinspan

#endif  // TWINSPAN_COMMON_CONFIG_JSON_FILE_H_
