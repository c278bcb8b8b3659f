// DynamicConv's argument checks, shared by the CPU op and its CUDA twin so both refuse the same
// arguments with the same messages.
#ifndef TWINSPAN_KERNELS_CPU_DYNAMIC_CONV_CHECK_H_
#define TWINSPAN_KERNELS_CPU_DYNAMIC_CONV_CHECK_H_

#include <span>

#include "absl/status/status.h"
#include "kernels/cpu/dynamic_conv.h"

namespace twinspan::cpu {

// OK when the sizes of out, x, base and dynamic agree with `params` (see DynamicConv); reads only
// the spans' sizes, so the spans may hold device pointers.
// Errors: InvalidArgument naming the argument: channels not a positive multiple of group_size,
// taps <= 0, rows < 0, dynamic_row_stride below taps x groups, or a size that disagrees.
absl::Status CheckDynamicConv(std::span<float> out, std::span<const float> x,
                              std::span<const float> base, std::span<const float> dynamic,
                              const DynamicConvParams& params);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_DYNAMIC_CONV_CHECK_H_
