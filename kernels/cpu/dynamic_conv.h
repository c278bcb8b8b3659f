// DFlash2's grouped dynamic causal convolution over the rows of one block (B slots, H channels).
#ifndef TWINSPAN_KERNELS_CPU_DYNAMIC_CONV_H_
#define TWINSPAN_KERNELS_CPU_DYNAMIC_CONV_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

struct DynamicConvParams {
  int64_t rows = 0;        // B: block slots; taps never reach outside the block.
  int64_t channels = 0;    // H
  int64_t taps = 0;        // Kc (conv_kernel_size)
  int64_t group_size = 0;  // g: channels that share one dynamic coefficient; H % g == 0.
  // Floats between consecutive rows of `dynamic` (the kernel projection stores both sides in one
  // row of 2*Kc*G, so one side is a strided view of it).
  int64_t dynamic_row_stride = 0;
};

// out[t, c] = sum over o < min(Kc, t + 1) of (base[o, c] + dynamic[t, o, c / g]) * x[t - o, c],
// where dynamic[t, o, grp] sits at dynamic[t * dynamic_row_stride + o * (H / g) + grp].
// x: [B, H]; base: [Kc, H]; out: [B, H], must not alias x.
// Errors: InvalidArgument naming the argument when a size disagrees with `params`.
absl::Status DynamicConv(const Context& ctx, std::span<float> out, std::span<const float> x,
                         std::span<const float> base, std::span<const float> dynamic,
                         const DynamicConvParams& params);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_DYNAMIC_CONV_H_
