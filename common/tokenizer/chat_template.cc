#include "common/tokenizer/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace twinspan::tokenizer {
namespace {

absl::StatusOr<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path.string()));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// A token in tokenizer_config.json: a string or an AddedToken object with "content".
std::optional<std::string> TokenString(const nlohmann::ordered_json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string()) {
    return value["content"].get<std::string>();
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<ChatTemplate> ChatTemplate::FromSource(
    std::string_view source, std::vector<std::pair<std::string, std::string>> special_tokens) {
  ABSL_ASSIGN_OR_RETURN(jinja::Template parsed, jinja::Template::Parse(source));
  ChatTemplate t;
  t.source_ = std::string(source);
  t.template_ = std::make_shared<const jinja::Template>(std::move(parsed));
  for (auto& [name, value] : special_tokens)
    t.special_tokens_.emplace_back(name, jinja::Value::String(value));
  return t;
}

absl::StatusOr<ChatTemplate> ChatTemplate::Open(const std::string& dir) {
  const std::filesystem::path folder(dir);
  const std::filesystem::path config_path = folder / "tokenizer_config.json";
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  std::error_code error;
  if (std::filesystem::exists(config_path, error)) {
    ABSL_ASSIGN_OR_RETURN(std::string bytes, ReadFile(config_path));
    config = nlohmann::ordered_json::parse(bytes, nullptr, /*allow_exceptions=*/false);
    if (config.is_discarded() || !config.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(config_path.string(), ": not a JSON object"));
    }
  }
  std::optional<std::string> source;
  if (config.contains("chat_template")) {
    const nlohmann::ordered_json& value = config["chat_template"];
    if (value.is_string()) {
      source = value.get<std::string>();
    } else if (value.is_array()) {
      for (const auto& item : value) {
        if (item.is_object() && item.value("name", "") == "default" && item.contains("template") &&
            item["template"].is_string()) {
          source = item["template"].get<std::string>();
        }
      }
    }
    if (!source.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(config_path.string(),
                       ": chat_template is neither a string nor a list with a "
                       "\"default\" template"));
    }
  } else if (std::filesystem::exists(folder / "chat_template.jinja", error)) {
    ABSL_ASSIGN_OR_RETURN(source, ReadFile(folder / "chat_template.jinja"));
  } else {
    return absl::NotFoundError(
        absl::StrCat("no chat template in ", dir,
                     " (tokenizer_config.json \"chat_template\" or chat_template.jinja)"));
  }
  std::vector<std::pair<std::string, std::string>> special;
  for (const char* name : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                           "cls_token", "mask_token"}) {
    if (!config.contains(name)) continue;
    std::optional<std::string> token = TokenString(config[name]);
    if (token.has_value()) special.emplace_back(name, *token);
  }
  absl::StatusOr<ChatTemplate> t = FromSource(*source, std::move(special));
  if (!t.ok())
    return absl::Status(t.status().code(), absl::StrCat(dir, ": ", t.status().message()));
  if (config.contains("additional_special_tokens") &&
      config["additional_special_tokens"].is_array()) {
    jinja::List tokens;
    for (const auto& item : config["additional_special_tokens"]) {
      std::optional<std::string> token = TokenString(item);
      if (token.has_value()) tokens.push_back(jinja::Value::String(*token));
    }
    t->special_tokens_.emplace_back("additional_special_tokens",
                                    jinja::Value::MakeList(std::move(tokens)));
  }
  return t;
}

absl::StatusOr<std::string> ChatTemplate::Render(const nlohmann::ordered_json& messages,
                                                 const ChatOptions& options) const {
  if (!messages.is_array()) return absl::InvalidArgumentError("chat messages must be a JSON array");
  std::vector<std::pair<std::string, jinja::Value>> variables = special_tokens_;
  const auto add_json = [&variables](const std::string& name,
                                     const nlohmann::ordered_json& json) -> absl::Status {
    absl::StatusOr<jinja::Value> value = jinja::Value::FromJson(json);
    if (!value.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("chat template variable '", name, "': ", value.status().message()));
    }
    variables.emplace_back(name, *std::move(value));
    return absl::OkStatus();
  };
  ABSL_RETURN_IF_ERROR(add_json("messages", messages));
  ABSL_RETURN_IF_ERROR(add_json("tools", options.tools));
  variables.emplace_back("documents", jinja::Value::None());
  variables.emplace_back("add_generation_prompt",
                         jinja::Value::Bool(options.add_generation_prompt));
  if (options.enable_thinking.has_value()) {
    variables.emplace_back("enable_thinking", jinja::Value::Bool(*options.enable_thinking));
  }
  if (options.extra.is_object()) {
    for (const auto& [key, value] : options.extra.items())
      ABSL_RETURN_IF_ERROR(add_json(key, value));
  }
  return template_->Render(variables, options.max_render_steps);
}

}  // namespace twinspan::tokenizer
