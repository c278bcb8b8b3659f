#include "common/config/hf_config.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/config/json_file.h"
#include "common/status.h"

namespace twinspan {

std::string HfConfig::text_where() const {
  return raw.contains("text_config") ? absl::StrCat(path, ": text_config") : path;
}

absl::StatusOr<HfConfig> ParseHfConfig(nlohmann::json raw, const std::string& path) {
  if (!raw.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not an object"));
  HfConfig config;
  config.path = path;
  config.raw = std::move(raw);
  const nlohmann::json& top = config.raw;
  absl::StatusOr<std::string> model_type = GetString(top, "model_type", path);
  if (!model_type.ok()) return absl::InvalidArgumentError(model_type.status().message());
  config.model_type = *model_type;

  if (auto it = top.find("text_config"); it != top.end() && !it->is_null()) {
    if (!it->is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": \"text_config\" is not an object"));
    }
    config.text = *it;
  } else {
    config.text = top;
  }
  const std::string text_where = config.text_where();
  ABSL_ASSIGN_OR_RETURN(std::optional<std::string> text_type,
                        GetOptionalString(config.text, "model_type", text_where));
  config.text_model_type = text_type.value_or(config.model_type);

  if (auto it = top.find("architectures"); it != top.end() && !it->is_null()) {
    if (!it->is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": \"architectures\" is not a list"));
    }
    for (const nlohmann::json& name : *it) {
      if (!name.is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": \"architectures\" holds a non-string"));
      }
      config.architectures.push_back(name.get<std::string>());
    }
  }

  for (const auto& [object, where] :
       {std::pair<const nlohmann::json*, std::string>{&top, path}, {&config.text, text_where}}) {
    auto it = object->find("quantization_config");
    if (it == object->end() || it->is_null()) continue;
    ABSL_ASSIGN_OR_RETURN(
        QuantizationConfig quantization,
        ParseQuantizationConfig(*it, absl::StrCat(where, ": quantization_config")));
    config.quantization = std::move(quantization);
    break;
  }

  if (auto it = top.find("dflash_config"); it != top.end() && !it->is_null()) {
    ABSL_ASSIGN_OR_RETURN(DFlashConfig dflash, ParseDFlashConfig(*it, top, path));
    config.dflash = std::move(dflash);
  }
  return config;
}

absl::StatusOr<HfConfig> LoadHfConfig(const std::string& dir_or_file) {
  std::error_code error;
  std::string path = dir_or_file;
  if (std::filesystem::is_directory(dir_or_file, error)) {
    path = (std::filesystem::path(dir_or_file) / "config.json").string();
  }
  ABSL_ASSIGN_OR_RETURN(nlohmann::json raw, LoadJsonFile(path));
  return ParseHfConfig(std::move(raw), path);
}

}  // namespace twinspan
