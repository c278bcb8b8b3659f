// An output folder that appears whole or not at all: written under a hidden name beside its final
// path, renamed into place by Commit, and removed (with everything in it) if never committed.
#ifndef TWINSPAN_COMMON_FILES_STAGED_DIR_H_
#define TWINSPAN_COMMON_FILES_STAGED_DIR_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace twinspan::files {

class StagedDir {
 public:
  // Checks `final_path` first: AlreadyExists when it exists and is not an empty folder (or is a
  // file); NotFound when its parent folder does not exist; PermissionDenied naming the parent
  // when the staging folder cannot be made there.
  static absl::StatusOr<std::unique_ptr<StagedDir>> Create(const std::string& final_path);
  ~StagedDir();

  StagedDir(const StagedDir&) = delete;
  StagedDir& operator=(const StagedDir&) = delete;

  // The staging folder to write into.
  const std::string& path() const { return path_; }

  // Renames the staging folder to the final path (replacing an empty folder there). Internal
  // naming both paths when that fails; the staging folder is then still removed.
  absl::Status Commit();

 private:
  StagedDir(std::string path, std::string final_path)
      : path_(std::move(path)), final_path_(std::move(final_path)) {}

  std::string path_;
  std::string final_path_;
  bool committed_ = false;
};

}  // namespace twinspan::files

#endif  // TWINSPAN_COMMON_FILES_STAGED_DIR_H_
