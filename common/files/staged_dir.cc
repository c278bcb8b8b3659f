#include "common/files/staged_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/str_format.h"

namespace twinspan::files {

namespace fs = std::filesystem;

absl::StatusOr<std::unique_ptr<StagedDir>> StagedDir::Create(const std::string& final_path) {
  std::error_code ec;
  const fs::path target = fs::absolute(fs::path(final_path), ec).lexically_normal();
  if (fs::exists(target, ec) && !(fs::is_directory(target, ec) && fs::is_empty(target, ec))) {
    return absl::AlreadyExistsError(absl::StrFormat(
        "output %s already exists and is not an empty folder; remove it or choose another",
        final_path));
  }
  fs::path parent = target.parent_path();
  if (target.filename().empty()) parent = parent.parent_path();  // "out/" names "out".
  if (!fs::is_directory(parent, ec)) {
    return absl::NotFoundError(absl::StrFormat("output %s: its parent folder %s does not exist",
                                               final_path, parent.string()));
  }
  const std::string name = target.filename().empty() ? target.parent_path().filename().string()
                                                     : target.filename().string();
  std::string pattern = (parent / ("." + name + ".partial-XXXXXX")).string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "output %s: cannot write in %s (%s)", final_path, parent.string(), std::strerror(errno)));
  }
  return std::unique_ptr<StagedDir>(new StagedDir(buffer.data(), (parent / name).string()));
}

StagedDir::~StagedDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

absl::Status StagedDir::Commit() {
  std::error_code ec;
  // mkdtemp made it private (0700); the checkpoint is an ordinary folder (0755).
  fs::permissions(path_,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                      fs::perms::others_read | fs::perms::others_exec,
                  ec);
  if (fs::is_directory(final_path_, ec) && fs::is_empty(final_path_, ec)) {
    fs::remove(final_path_, ec);  // rename(2) would replace it too; this also covers odd modes.
  }
  fs::rename(path_, final_path_, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrFormat("cannot move %s to %s: %s", path_, final_path_, ec.message()));
  }
  committed_ = true;
  return absl::OkStatus();
}

}  // namespace twinspan::files
