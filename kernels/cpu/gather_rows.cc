#include "kernels/cpu/gather_rows.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace twinspan::cpu {

absl::Status CheckGatherRows(const float* src, int64_t src_stride, const int64_t* rows,
                             int64_t count, int64_t width, const float* dst, int64_t dst_stride) {
  if (count < 0 || width < 0 || src_stride < width || dst_stride < width ||
      (count > 0 && (src == nullptr || rows == nullptr || dst == nullptr))) {
    return absl::InvalidArgumentError(
        absl::StrFormat("GatherRows: %d rows of width %d, strides %d / %d (or a null array)", count,
                        width, src_stride, dst_stride));
  }
  for (int64_t i = 0; i < count; ++i) {
    if (rows[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("GatherRows: row index %d at %d is negative", rows[i], i));
    }
  }
  return absl::OkStatus();
}

absl::Status GatherRows(const Context& /*ctx*/, const float* src, int64_t src_stride,
                        const int64_t* rows, int64_t count, int64_t width, float* dst,
                        int64_t dst_stride) {
  if (absl::Status s = CheckGatherRows(src, src_stride, rows, count, width, dst, dst_stride);
      !s.ok()) {
    return s;
  }
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(dst + i * dst_stride, src + rows[i] * src_stride, width * sizeof(float));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
