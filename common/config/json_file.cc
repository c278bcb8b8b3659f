#include "common/config/json_file.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace twinspan {
namespace {

using nlohmann::json;

// Key lookup that never throws: nullptr for a non-object, an absent key or a null value.
const json* Lookup(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(std::string(key));
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

absl::Status WrongType(std::string_view where, std::string_view key, std::string_view wanted,
                       const json& value) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(where), ": \"", std::string(key),
                                                 "\" must be ", std::string(wanted), ", not ",
                                                 value.type_name()));
}

absl::Status Missing(std::string_view where, std::string_view key) {
  return absl::NotFoundError(
      absl::StrCat(std::string(where), ": required key \"", std::string(key), "\" is missing"));
}

absl::StatusOr<int64_t> AsInt(const json& value, std::string_view key, std::string_view where) {
  if (value.is_number_integer()) {
    if (value.is_number_unsigned() && value.get<uint64_t>() > INT64_MAX) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(where), ": \"", std::string(key), "\" does not fit in 64 bits"));
    }
    return value.get<int64_t>();
  }
  // JSON writers sometimes emit 10000000.0 for an integer field.
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) {
      return static_cast<int64_t>(d);
    }
  }
  return WrongType(where, key, "an integer", value);
}

}  // namespace

absl::StatusOr<nlohmann::json> LoadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  json::parser_callback_t no_callback = nullptr;
  json parsed = json::parse(text, no_callback, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not valid JSON"));
  }
  return parsed;
}

absl::StatusOr<std::optional<std::string>> GetOptionalString(const json& object,
                                                             std::string_view key,
                                                             std::string_view where) {
  const json* value = Lookup(object, key);
  if (value == nullptr) return std::optional<std::string>();
  if (!value->is_string()) return WrongType(where, key, "a string", *value);
  return std::optional<std::string>(value->get<std::string>());
}

absl::StatusOr<std::optional<int64_t>> GetOptionalInt(const json& object, std::string_view key,
                                                      std::string_view where) {
  const json* value = Lookup(object, key);
  if (value == nullptr) return std::optional<int64_t>();
  ABSL_ASSIGN_OR_RETURN(int64_t v, AsInt(*value, key, where));
  return std::optional<int64_t>(v);
}

absl::StatusOr<std::optional<double>> GetOptionalDouble(const json& object, std::string_view key,
                                                        std::string_view where) {
  const json* value = Lookup(object, key);
  if (value == nullptr) return std::optional<double>();
  if (!value->is_number()) return WrongType(where, key, "a number", *value);
  return std::optional<double>(value->get<double>());
}

absl::StatusOr<std::optional<bool>> GetOptionalBool(const json& object, std::string_view key,
                                                    std::string_view where) {
  const json* value = Lookup(object, key);
  if (value == nullptr) return std::optional<bool>();
  if (!value->is_boolean()) return WrongType(where, key, "true or false", *value);
  return std::optional<bool>(value->get<bool>());
}

absl::StatusOr<std::optional<std::vector<int64_t>>> GetOptionalIntList(const json& object,
                                                                       std::string_view key,
                                                                       std::string_view where) {
  const json* value = Lookup(object, key);
  if (value == nullptr) return std::optional<std::vector<int64_t>>();
  if (!value->is_array()) return WrongType(where, key, "a list of integers", *value);
  std::vector<int64_t> out;
  for (const json& item : *value) {
    if (!item.is_number_integer()) return WrongType(where, key, "a list of integers", *value);
    ABSL_ASSIGN_OR_RETURN(int64_t v, AsInt(item, key, where));
    out.push_back(v);
  }
  return std::optional<std::vector<int64_t>>(std::move(out));
}

template <typename T>
absl::StatusOr<T> Require(absl::StatusOr<std::optional<T>> value, std::string_view key,
                          std::string_view where) {
  if (!value.ok()) return value.status();
  if (!value->has_value()) return Missing(where, key);
  return **std::move(value);
}

absl::StatusOr<std::string> GetString(const json& object, std::string_view key,
                                      std::string_view where) {
  return Require(GetOptionalString(object, key, where), key, where);
}

absl::StatusOr<int64_t> GetInt(const json& object, std::string_view key, std::string_view where) {
  return Require(GetOptionalInt(object, key, where), key, where);
}

absl::StatusOr<double> GetDouble(const json& object, std::string_view key, std::string_view where) {
  return Require(GetOptionalDouble(object, key, where), key, where);
}

absl::StatusOr<bool> GetBool(const json& object, std::string_view key, std::string_view where) {
  return Require(GetOptionalBool(object, key, where), key, where);
}

absl::StatusOr<std::vector<int64_t>> GetIntList(const json& object, std::string_view key,
                                                std::string_view where) {
  return Require(GetOptionalIntList(object, key, where), key, where);
}

}  // namespace twinspan
