#include "common/safetensors/safetensors_file.h"

#include <algorithm>
#include <utility>

#include "common/safetensors/header_parser.h"
#include "common/status.h"

namespace twinspan {

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
  ABSL_ASSIGN_OR_RETURN(SafetensorsContents contents,
                        ParseSafetensorsImage(mapped->data(), mapped->size(), path));
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->file_ = std::move(mapped);
  file->tensors_ = std::move(contents.tensors);
  file->metadata_ = std::move(contents.metadata);
  std::sort(file->tensors_.begin(), file->tensors_.end(),
            [](const TensorView& a, const TensorView& b) { return a.name < b.name; });
  return file;
}

const TensorView* SafetensorsFile::Find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const TensorView& t, std::string_view n) { return t.name < n; });
  if (it == tensors_.end() || it->name != name) return nullptr;
  return &*it;
}

}  // namespace twinspan
