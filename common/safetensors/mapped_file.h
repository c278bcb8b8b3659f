// A read-only memory map of a whole file, unmapped on destruction. Internal to this library.
#ifndef TWINSPAN_COMMON_SAFETENSORS_MAPPED_FILE_H_
#define TWINSPAN_COMMON_SAFETENSORS_MAPPED_FILE_H_

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace twinspan {

class MappedFile {
 public:
  // NotFound when the file does not exist; InvalidArgument for a directory or other non-regular
  // file; Internal for a failed open/stat/mmap (each message names the path and the errno text).
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const std::byte* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const std::byte* data_;  // nullptr for an empty file.
  size_t size_;
};

}  // namespace twinspan

#endif  // TWINSPAN_COMMON_SAFETENSORS_MAPPED_FILE_H_
