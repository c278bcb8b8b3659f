#include "kernels/cpu/kv_write.h"

#include "absl/strings/str_format.h"

namespace twinspan::cpu {

absl::Status KvWrite(const Context& /*ctx*/, KvCache& kv, const int64_t* positions, int64_t rows,
                     const float* k, int64_t k_stride, const float* v, int64_t v_stride) {
  if (rows < 0 || k_stride < kv.row_size() || v_stride < kv.row_size() ||
      (rows > 0 && (positions == nullptr || k == nullptr || v == nullptr))) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "KvWrite: rows %d, k_stride %d, v_stride %d (or a null array) for rows of %d floats", rows,
        k_stride, v_stride, kv.row_size()));
  }
  for (int64_t r = 0; r < rows; ++r) {
    if (positions[r] < 0 || positions[r] >= kv.capacity()) {
      return absl::OutOfRangeError(absl::StrFormat(
          "KvWrite: row %d at position %d outside capacity %d", r, positions[r], kv.capacity()));
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    absl::Status status = kv.Write(positions[r], k + r * k_stride, v + r * v_stride);
    if (!status.ok()) return status;  // Unreachable: the positions are checked above.
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
