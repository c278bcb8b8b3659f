// The CUDA backend: backend::Backend on one GPU and one stream it owns. Every op forwards to its
// twinspan::cuda twin (kernels/cuda/<op>.cuh); buffers and per-op scratch come from a
// stream-ordered pool (cudaMallocFromPoolAsync) that keeps freed memory cached, so a forward's
// scratch costs no cudaMalloc. Weights and tables are plain cudaMalloc blocks.
//
// Errors: CUDA failures are Internal with CUDA's error string; out-of-memory is ResourceExhausted
// naming the bytes; handles and buffers of another backend are InvalidArgument.
#ifndef TWINSPAN_KERNELS_CUDA_CUDA_BACKEND_H_
#define TWINSPAN_KERNELS_CUDA_CUDA_BACKEND_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <memory>

#include "absl/status/statusor.h"
#include "kernels/backend/backend.h"

namespace twinspan::cuda {

struct CudaBackendOptions {
  // CUDA device ordinal; the caller picks it (placement), the backend never guesses.
  int device = 0;
  // Bytes of freed pool memory kept for reuse instead of returned to the driver.
  uint64_t pool_release_threshold = std::numeric_limits<uint64_t>::max();
  // Host threads relaying out each EXL3 weight at upload (0: the machine's hardware threads): the
  // relayout touches every byte of the 27B's 13 GB of trellis.
  int upload_threads = 0;
};

// A backend on options.device with its own stream and memory pool. InvalidArgument naming the
// ordinal when the machine has no such device; FailedPrecondition when no usable NVIDIA driver is
// loaded (VisibleDeviceCount); Internal when CUDA cannot create the stream or pool. The backend
// makes its device current around each call and restores the caller's.
absl::StatusOr<std::unique_ptr<backend::Backend>> NewCudaBackend(const CudaBackendOptions& options);

// The stream a CUDA backend issues its ops on, for benchmarks that time them with CUDA events or
// queue their own kernels in order with them (tools/gpu/round_bench.cc). InvalidArgument for
// another backend. The stream lives as long as the backend.
absl::StatusOr<cudaStream_t> CudaBackendStream(const backend::Backend& backend);

// Sets cuda::Context::exl3_prompt_rows (0: the default kExl3PromptRows, -1: prompts as 64-row
// launches) and exl3_prompt_tile (0: picked per call, 64 or 256 rows a block) for the backend's
// EXL3 calls from now on, so a benchmark times the paths on one loaded model; the bits are the
// same. InvalidArgument for another backend, rows < -1 or another tile. REQUIRES: no call of the
// backend in flight on another thread.
absl::Status SetCudaBackendExl3Prompt(backend::Backend& backend, int rows, int tile);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_CUDA_BACKEND_H_
