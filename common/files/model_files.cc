#include "common/files/model_files.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"

namespace twinspan::files {

namespace fs = std::filesystem;

absl::Status WriteJson(const std::string& path, const nlohmann::ordered_json& value) {
  std::ofstream f(path);
  f << value.dump(4) << "\n";
  f.close();
  if (!f) return absl::InternalError(absl::StrFormat("cannot write %s", path));
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::ordered_json> ReadConfigJson(const std::string& dir) {
  const std::string path = (fs::path(dir) / "config.json").string();
  std::ifstream f(path);
  if (!f) return absl::NotFoundError(absl::StrFormat("%s: cannot open", path));
  std::stringstream text;
  text << f.rdbuf();
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(text.str(), nullptr, false);
  if (config.is_discarded() || !config.is_object()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s is not a JSON object", path));
  }
  return config;
}

absl::Status CopyModelFiles(const std::string& from, const std::string& to) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(from, ec)) {
    const std::string name = e.path().filename().string();
    const bool wanted = name == "tokenizer.json" || name == "tokenizer_config.json" ||
                        name == "generation_config.json" || name == "special_tokens_map.json" ||
                        absl::StartsWith(name, "chat_template");
    if (!wanted || !e.is_regular_file()) continue;
    fs::copy_file(e.path(), fs::path(to) / name, ec);
    // A read-only source (a shared folder) must not make the copy read-only.
    if (!ec)
      fs::permissions(fs::path(to) / name, fs::perms::owner_write, fs::perm_options::add, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrFormat("cannot copy %s to %s: %s", e.path().string(), to, ec.message()));
    }
  }
  if (ec) return absl::InternalError(absl::StrFormat("cannot list %s: %s", from, ec.message()));
  return absl::OkStatus();
}

}  // namespace twinspan::files
