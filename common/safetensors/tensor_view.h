// A typed, shaped, non-owning view of one tensor's bytes (usually inside a memory-mapped file).
#ifndef TWINSPAN_COMMON_SAFETENSORS_TENSOR_VIEW_H_
#define TWINSPAN_COMMON_SAFETENSORS_TENSOR_VIEW_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/safetensors/dtype.h"

namespace twinspan {

// `data` is owned elsewhere (SafetensorsFile / Checkpoint) and may be unaligned: read with memcpy.
// Invariant for views made by this library: nbytes == numel() * DTypeSize(dtype).
struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // Empty for a 0-dim (scalar) tensor.
  const std::byte* data = nullptr;
  size_t nbytes = 0;

  // Product of `shape`; 1 for a 0-dim tensor.
  int64_t numel() const;
};

// "name F16[128, 256]": for error messages.
std::string DescribeTensor(const TensorView& view);

// Converts F32/F16/BF16 exactly to float. InvalidArgument naming the tensor for any other dtype or
// a view whose nbytes does not match its shape.
absl::StatusOr<std::vector<float>> ToFloat(const TensorView& view);

// Converts I64/I32/I16/I8/U8/BOOL to int64. InvalidArgument naming the tensor for float dtypes or
// a view whose nbytes does not match its shape.
absl::StatusOr<std::vector<int64_t>> ToInt64(const TensorView& view);

}  // namespace twinspan

#endif  // TWINSPAN_COMMON_SAFETENSORS_TENSOR_VIEW_H_
