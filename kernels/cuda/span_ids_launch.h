// The launch of SpanIds' kernel, callable from C++20 host code (span_ids.cc) and defined in
// span_ids.cu. Internal to the CUDA backend.
#ifndef TWINSPAN_KERNELS_CUDA_SPAN_IDS_LAUNCH_H_
#define TWINSPAN_KERNELS_CUDA_SPAN_IDS_LAUNCH_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace twinspan::cuda::span_ids_kernel {

constexpr int kThreads = 128;
constexpr int kMaxSpans = 64;  // cpu::kMaxSpanIdsSpans

// Validated arguments: span s holds packed columns [packed_end[s - 1], packed_end[s]) (0 before
// the first) and starts at vocabulary id begin[s].
struct Args {
  const int32_t* columns;
  int32_t* ids;
  int64_t count;
  int spans;
  int64_t begin[kMaxSpans];
  int64_t packed_end[kMaxSpans];
};

// Enqueues the kernel on `stream`; returns the launch's error.
cudaError_t LaunchSpanIds(const Args& args, cudaStream_t stream);

}  // namespace twinspan::cuda::span_ids_kernel

#endif  // TWINSPAN_KERNELS_CUDA_SPAN_IDS_LAUNCH_H_
