// Host side of DynamicConv: the CPU op's validation, then the launch (dynamic_conv.cu).
#include "kernels/cuda/dynamic_conv.cuh"

#include <cstdint>

#include "absl/strings/str_format.h"
#include "kernels/cuda/dynamic_conv_launch.h"

namespace twinspan::cuda {

absl::Status DynamicConv(const Context& ctx, std::span<float> out, std::span<const float> x,
                         std::span<const float> base, std::span<const float> dynamic,
                         const cpu::DynamicConvParams& params) {
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
  if (rows == 0) return absl::OkStatus();
  if (!out.data() || !x.data() || !base.data() || !dynamic.data()) {
    return absl::InvalidArgumentError(
        "DynamicConv: out, x, base and dynamic must be device memory");
  }
  if (out.data() < x.data() + x.size() && x.data() < out.data() + out.size()) {
    return absl::InvalidArgumentError("DynamicConv: out overlaps x");
  }
  const dynamic_conv_kernel::Args args{
      out.data(), x.data(), base.data(), dynamic.data(), rows, h, kc, g, params.dynamic_row_stride};
  const cudaError_t e = dynamic_conv_kernel::LaunchDynamicConv(args, ctx.stream);
  if (e != cudaSuccess) {
    return absl::InternalError(
        absl::StrFormat("DynamicConv: launch failed: %s", cudaGetErrorString(e)));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cuda
