#include "kernels/cuda/embedding_table.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/safetensors/half.h"
#include "common/status.h"

namespace twinspan::cuda {

absl::StatusOr<DeviceEmbeddingTable> DeviceEmbeddingTable::Upload(
    const cpu::EmbeddingTable& table) {
  if (table.rows() <= 0 || table.dim() <= 0) {
    return absl::InvalidArgumentError("DeviceEmbeddingTable::Upload: empty table");
  }
  const size_t element = table.dtype() == cpu::EmbeddingDtype::kF32 ? 4 : 2;
  const size_t row_bytes = static_cast<size_t>(table.dim()) * element;
  DeviceEmbeddingTable d;
  ABSL_ASSIGN_OR_RETURN(
      d.memory_, DeviceMemory::Allocate(row_bytes * table.rows(), "DeviceEmbeddingTable::Upload"));
  // Rows go up in slices so a 2.5 GB table never needs a second host copy of itself.
  constexpr int64_t kSliceRows = 4096;
  std::vector<float> floats(static_cast<size_t>(std::min(kSliceRows, table.rows()) * table.dim()));
  std::vector<uint8_t> bytes(floats.size() * element);
  for (int64_t r0 = 0; r0 < table.rows(); r0 += kSliceRows) {
    const int64_t n = std::min(kSliceRows, table.rows() - r0);
    for (int64_t r = 0; r < n; ++r) table.Row(r0 + r, floats.data() + r * table.dim());
    const size_t count = static_cast<size_t>(n * table.dim());
    if (element == 4) {
      std::memcpy(bytes.data(), floats.data(), count * 4);
    } else {
      auto* h = reinterpret_cast<uint16_t*>(bytes.data());
      for (size_t i = 0; i < count; ++i) {
        h[i] = table.dtype() == cpu::EmbeddingDtype::kBF16 ? FloatToBFloat16(floats[i])
                                                           : FloatToHalf(floats[i]);
      }
    }
    ABSL_RETURN_IF_ERROR(
        CudaStatus(cudaMemcpy(static_cast<uint8_t*>(d.memory_.get()) + r0 * row_bytes, bytes.data(),
                              count * element, cudaMemcpyHostToDevice),
                   "DeviceEmbeddingTable::Upload cudaMemcpy"));
  }
  d.view_.data = d.memory_.get();
  d.view_.dtype = table.dtype();
  d.view_.rows = table.rows();
  d.view_.dim = table.dim();
  return d;
}

}  // namespace twinspan::cuda
