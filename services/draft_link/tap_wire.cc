#include "services/draft_link/tap_wire.h"

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/safetensors/half.h"

namespace twinspan::rpc {

void EncodeTapRows(const float* data, int64_t rows, int64_t width, v1::DType dtype,
                   v1::Tensor* tensor) {
  tensor->set_dtype(dtype);
  tensor->add_shape(static_cast<uint32_t>(rows));
  tensor->add_shape(static_cast<uint32_t>(width));
  const size_t n = static_cast<size_t>(rows * width);
  if (dtype == v1::DTYPE_BF16) {
    std::string* bytes = tensor->mutable_data();
    bytes->resize(n * sizeof(uint16_t));
    for (size_t i = 0; i < n; ++i) {
      const uint16_t b = FloatToBFloat16(data[i]);
      std::memcpy(bytes->data() + i * sizeof(uint16_t), &b, sizeof(b));
    }
    return;
  }
  tensor->set_data(reinterpret_cast<const char*>(data), n * sizeof(float));
}

absl::StatusOr<engine::TapRows> DecodeTapRows(const v1::Tensor& tensor, v1::DType dtype, size_t ids,
                                              int64_t width, bool fused,
                                              std::vector<float>* storage) {
  if (tensor.dtype() != dtype || tensor.shape_size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "taps: expected dtype ", v1::DType_Name(dtype), " and shape [rows, width], got dtype ",
        v1::DType_Name(tensor.dtype()), " with ", tensor.shape_size(), " dims"));
  }
  const int64_t rows = tensor.shape(0);
  const int64_t got_width = tensor.shape(1);
  if (rows != static_cast<int64_t>(ids) || got_width != width) {
    return absl::InvalidArgumentError(absl::StrCat("taps: shape [", rows, ", ", got_width,
                                                   "] does not match ", ids, " ids x width ", width,
                                                   fused ? " (fused)" : " (raw)"));
  }
  const size_t n = static_cast<size_t>(rows * width);
  const size_t element = dtype == v1::DTYPE_BF16 ? sizeof(uint16_t) : sizeof(float);
  if (tensor.data().size() != n * element) {
    return absl::InvalidArgumentError(absl::StrCat("taps: ", tensor.data().size(),
                                                   " bytes for shape [", rows, ", ", width, "] of ",
                                                   v1::DType_Name(dtype)));
  }
  storage->resize(n);
  if (dtype == v1::DTYPE_BF16) {
    for (size_t i = 0; i < n; ++i) {
      uint16_t b = 0;
      std::memcpy(&b, tensor.data().data() + i * sizeof(uint16_t), sizeof(b));
      (*storage)[i] = BFloat16ToFloat(b);
    }
  } else {
    std::memcpy(storage->data(), tensor.data().data(), tensor.data().size());
  }
  return engine::TapRows{rows, width, *storage, fused};
}

}  // namespace twinspan::rpc
