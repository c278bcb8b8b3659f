// Writes safetensors files (tests, tools, golden fixtures). Not used on the serving path.
#ifndef TWINSPAN_COMMON_SAFETENSORS_WRITER_H_
#define TWINSPAN_COMMON_SAFETENSORS_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/safetensors/dtype.h"

namespace twinspan {

// A tensor with its own bytes (little-endian, row-major).
struct OwnedTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;

  static OwnedTensor FromFloats(std::string name, std::vector<int64_t> shape,
                                const std::vector<float>& values);
  static OwnedTensor FromInt64(std::string name, std::vector<int64_t> shape,
                               const std::vector<int64_t>& values);
  // Copies `values` as raw elements of `dtype` (sizeof(T) must equal DTypeSize(dtype)).
  template <typename T>
  static OwnedTensor FromRaw(std::string name, DType dtype, std::vector<int64_t> shape,
                             const std::vector<T>& values);
};

// Writes `tensors` (in the given order) to `path`, header padded to 8 bytes.
// InvalidArgument naming the tensor for a duplicate or empty name, a negative dimension, or bytes
// that do not match dtype x shape; Internal naming the path when the file cannot be written.
absl::Status WriteSafetensors(const std::string& path, const std::vector<OwnedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata = {});

template <typename T>
OwnedTensor OwnedTensor::FromRaw(std::string name, DType dtype, std::vector<int64_t> shape,
                                 const std::vector<T>& values) {
  OwnedTensor tensor{std::move(name), dtype, std::move(shape), {}};
  tensor.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(tensor.bytes.data(), values.data(), tensor.bytes.size());
  return tensor;
}

}  // namespace twinspan

#endif  // TWINSPAN_COMMON_SAFETENSORS_WRITER_H_
