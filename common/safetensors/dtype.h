// Element types a safetensors file may hold, with their on-disk names ("F32", "BF16", ...).
#ifndef TWINSPAN_COMMON_SAFETENSORS_DTYPE_H_
#define TWINSPAN_COMMON_SAFETENSORS_DTYPE_H_

#include <cstddef>
#include <string_view>

#include "absl/status/statusor.h"

namespace twinspan {

enum class DType { kF32, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool };

// Bytes per element (kBool is one byte, as safetensors stores it).
size_t DTypeSize(DType dtype);

// The safetensors name of `dtype`: "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL".
std::string_view DTypeName(DType dtype);

// Inverse of DTypeName. InvalidArgument naming the string for any other name (F64, U16,
// F8_E4M3...).
absl::StatusOr<DType> ParseDType(std::string_view name);

}  // namespace twinspan

#endif  // TWINSPAN_COMMON_SAFETENSORS_DTYPE_H_
