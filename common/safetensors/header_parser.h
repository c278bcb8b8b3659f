// Parses and validates a whole safetensors image held in memory: the 8-byte little-endian header
// length, the JSON header, and every tensor's byte range. Separate from file mapping so the fuzzer
// and the bad-input tests drive it directly.
#ifndef TWINSPAN_COMMON_SAFETENSORS_HEADER_PARSER_H_
#define TWINSPAN_COMMON_SAFETENSORS_HEADER_PARSER_H_

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/safetensors/tensor_view.h"

namespace twinspan {

// Largest JSON header accepted (the safetensors reference implementation's limit).
inline constexpr size_t kMaxSafetensorsHeaderBytes = 100u << 20;

struct SafetensorsContents {
  std::vector<TensorView> tensors;  // Sorted by name; views point into the parsed image.
  std::map<std::string, std::string> metadata;  // "__metadata__" (string values only).
};

// Validates `image[0, size)` and returns views into it. Never reads outside the image.
// Errors (each message starts with `source_name`, and names the tensor where there is one):
//   DataLoss: image shorter than 8 bytes, header length past the end or over
//     kMaxSafetensorsHeaderBytes, header not JSON or not an object, a malformed entry, an offset
//     pair outside the data section or not matching dtype x shape;
//   InvalidArgument: a dtype this library does not support.
absl::StatusOr<SafetensorsContents> ParseSafetensorsImage(const std::byte* image, size_t size,
                                                          std::string_view source_name);

}  // namespace twinspan

#endif  // TWINSPAN_COMMON_SAFETENSORS_HEADER_PARSER_H_
