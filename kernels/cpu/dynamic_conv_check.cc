#include "kernels/cpu/dynamic_conv_check.h"

#include <cstdint>

#include "absl/strings/str_format.h"

namespace twinspan::cpu {

absl::Status CheckDynamicConv(std::span<float> out, std::span<const float> x,
                              std::span<const float> base, std::span<const float> dynamic,
                              const DynamicConvParams& params) {
  const int64_t rows = params.rows, h = params.channels, kc = params.taps, g = params.group_size;
  if (rows < 0 || h <= 0 || kc <= 0 || g <= 0 || h % g != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "DynamicConv: channels = %d must be a positive multiple of group_size = %d, taps = %d > 0",
        h, g, kc));
  }
  const int64_t groups = h / g;
  if (params.dynamic_row_stride < kc * groups) {
    return absl::InvalidArgumentError(
        absl::StrFormat("DynamicConv: dynamic_row_stride = %d is below taps x groups = %d x %d",
                        params.dynamic_row_stride, kc, groups));
  }
  if (static_cast<int64_t>(x.size()) != rows * h || static_cast<int64_t>(out.size()) != rows * h) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "DynamicConv: x/out have %d/%d values, expected [%d, %d]", x.size(), out.size(), rows, h));
  }
  if (static_cast<int64_t>(base.size()) != kc * h) {
    return absl::InvalidArgumentError(
        absl::StrFormat("DynamicConv: base has %d values, expected [taps, channels] = [%d, %d]",
                        base.size(), kc, h));
  }
  const int64_t dynamic_needed =
      rows == 0 ? 0 : (rows - 1) * params.dynamic_row_stride + kc * groups;
  if (static_cast<int64_t>(dynamic.size()) < dynamic_needed) {
    return absl::InvalidArgumentError(
        absl::StrFormat("DynamicConv: dynamic has %d values, needs %d for %d rows of stride %d",
                        dynamic.size(), dynamic_needed, rows, params.dynamic_row_stride));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
