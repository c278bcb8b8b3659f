#include "common/safetensors/tensor_view.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/safetensors/half.h"

namespace twinspan {
namespace {

template <typename T>
T Load(const std::byte* data, size_t index) {
  T value;
  std::memcpy(&value, data + index * sizeof(T), sizeof(T));
  return value;
}

absl::Status CheckSize(const TensorView& view) {
  const size_t expected = static_cast<size_t>(view.numel()) * DTypeSize(view.dtype);
  if (view.nbytes != expected || (expected != 0 && view.data == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", DescribeTensor(view), " holds ",
                                                   view.nbytes, " bytes, shape needs ", expected));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string DescribeTensor(const TensorView& view) {
  return absl::StrCat(view.name, " ", std::string(DTypeName(view.dtype)), "[",
                      absl::StrJoin(view.shape, ", "), "]");
}

absl::StatusOr<std::vector<float>> ToFloat(const TensorView& view) {
  if (absl::Status status = CheckSize(view); !status.ok()) return status;
  const size_t n = static_cast<size_t>(view.numel());
  std::vector<float> out(n);
  switch (view.dtype) {
    case DType::kF32:
      if (n != 0) std::memcpy(out.data(), view.data, n * sizeof(float));
      return out;
    case DType::kF16:
      for (size_t i = 0; i < n; ++i) out[i] = HalfToFloat(Load<uint16_t>(view.data, i));
      return out;
    case DType::kBF16:
      for (size_t i = 0; i < n; ++i) out[i] = BFloat16ToFloat(Load<uint16_t>(view.data, i));
      return out;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor ", DescribeTensor(view), " is not a float tensor (F32, F16 or BF16 expected)"));
  }
}

absl::StatusOr<std::vector<int64_t>> ToInt64(const TensorView& view) {
  if (absl::Status status = CheckSize(view); !status.ok()) return status;
  if (view.dtype == DType::kF32 || view.dtype == DType::kF16 || view.dtype == DType::kBF16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor ", DescribeTensor(view), " is not an integer tensor (I64..U8 or BOOL expected)"));
  }
  const size_t n = static_cast<size_t>(view.numel());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    switch (view.dtype) {
      case DType::kI64:
        out[i] = Load<int64_t>(view.data, i);
        break;
      case DType::kI32:
        out[i] = Load<int32_t>(view.data, i);
        break;
      case DType::kI16:
        out[i] = Load<int16_t>(view.data, i);
        break;
      case DType::kI8:
        out[i] = Load<int8_t>(view.data, i);
        break;
      case DType::kU8:
        out[i] = Load<uint8_t>(view.data, i);
        break;
      case DType::kBool:
        out[i] = Load<uint8_t>(view.data, i) != 0 ? 1 : 0;
        break;
      default:
        break;  // Floats were refused above.
    }
  }
  return out;
}

}  // namespace twinspan
