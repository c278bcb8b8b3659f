// One memory-mapped safetensors file, validated on open.
#ifndef TWINSPAN_COMMON_SAFETENSORS_SAFETENSORS_FILE_H_
#define TWINSPAN_COMMON_SAFETENSORS_SAFETENSORS_FILE_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/safetensors/mapped_file.h"
#include "common/safetensors/tensor_view.h"

namespace twinspan {

// Immutable after Open, so any number of threads may read it. Views stay valid while it lives.
class SafetensorsFile {
 public:
  // Maps `path` and validates its header and every tensor's byte range (see header_parser.h for
  // the errors; each names `path` and the tensor). NotFound when the file does not exist.
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);

  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  // The tensor called `name`, or nullptr when the file has none.
  const TensorView* Find(std::string_view name) const;

  // Every tensor, sorted by name.
  const std::vector<TensorView>& tensors() const { return tensors_; }

  // The "__metadata__" map (empty when absent).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  const std::string& path() const { return file_->path(); }
  size_t file_bytes() const { return file_->size(); }

 private:
  SafetensorsFile() = default;

  std::unique_ptr<MappedFile> file_;
  std::vector<TensorView> tensors_;  // Sorted by name, so Find is a binary search.
  std::map<std::string, std::string> metadata_;
};

}  // namespace twinspan

#endif  // TWINSPAN_COMMON_SAFETENSORS_SAFETENSORS_FILE_H_
