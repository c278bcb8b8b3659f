// Host side of DynamicConv: the CPU op's validation, then the launch (dynamic_conv.cu).
#include "kernels/cuda/dynamic_conv.cuh"

#include <cstdint>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cpu/dynamic_conv_check.h"
#include "kernels/cuda/dynamic_conv_launch.h"

namespace twinspan::cuda {

absl::Status DynamicConv(const Context& ctx, std::span<float> out, std::span<const float> x,
                         std::span<const float> base, std::span<const float> dynamic,
                         const cpu::DynamicConvParams& params) {
  ABSL_RETURN_IF_ERROR(cpu::CheckDynamicConv(out, x, base, dynamic, params));
  const int64_t rows = params.rows, h = params.channels, kc = params.taps, g = params.group_size;
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
