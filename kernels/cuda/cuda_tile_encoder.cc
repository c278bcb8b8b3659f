#include "kernels/cuda/cuda_tile_encoder.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"
#include "kernels/cpu/trellis_encode.h"
#include "kernels/cuda/cuda_backend_handles.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/device_count.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/trellis_encode.cuh"

namespace twinspan::cuda {
namespace {

constexpr int64_t kTile = 256;

// `status` with the device in front, so a message from deep in a run says which GPU failed.
absl::Status OnDevice(int device, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrFormat("cuda:%d: %s", device, status.message()));
}

class CudaTileEncoder final : public exl3::quantize::TileEncoder {
 public:
  CudaTileEncoder(int device, cudaStream_t stream) : device_(device), stream_(stream) {}
  ~CudaTileEncoder() override {
    DeviceGuard guard(device_);
    cudaStreamSynchronize(stream_);
    absl::MutexLock lock(&mu_);
    // Freed here, under the guard: DeviceMemory frees on whichever device is current.
    tiles_ = DeviceMemory();
    states_ = DeviceMemory();
    values_ = DeviceMemory();
    cudaStreamDestroy(stream_);
  }
  CudaTileEncoder(const CudaTileEncoder&) = delete;
  CudaTileEncoder& operator=(const CudaTileEncoder&) = delete;

  std::string name() const override { return absl::StrCat("cuda:", device_); }

  absl::Status Encode(const exl3::quantize::TileCode& code, const float* tiles, int64_t num_tiles,
                      uint16_t* states, float* values) const override {
    const cpu::TrellisEncodeParams params{code.bits, code.codebook};
    ABSL_RETURN_IF_ERROR(cpu::ValidateTrellisEncode(tiles, num_tiles, params, states, values));
    if (num_tiles == 0) return absl::OkStatus();
    DeviceGuard guard(device_);
    absl::MutexLock lock(&mu_);
    return OnDevice(device_, EncodeLocked(params, tiles, num_tiles, states, values));
  }

 private:
  absl::Status EncodeLocked(const cpu::TrellisEncodeParams& params, const float* tiles,
                            int64_t num_tiles, uint16_t* states, float* values) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ABSL_RETURN_IF_ERROR(Reserve(num_tiles));
    const size_t n = static_cast<size_t>(num_tiles * kTile);
    auto* d_tiles = static_cast<float*>(tiles_.get());
    auto* d_states = static_cast<uint16_t*>(states_.get());
    auto* d_values = static_cast<float*>(values_.get());
    ABSL_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(d_tiles, tiles, n * sizeof(float), cudaMemcpyHostToDevice, stream_),
        "TileEncoder tiles cudaMemcpyAsync"));
    Context ctx;
    ctx.stream = stream_;
    absl::Status encoded = TrellisEncode(ctx, d_tiles, num_tiles, params, d_states, d_values);
    if (!encoded.ok()) {
      cudaStreamSynchronize(stream_);  // The upload may still read the caller's tiles.
      return encoded;
    }
    ABSL_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(states, d_states, n * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream_),
        "TileEncoder states cudaMemcpyAsync"));
    ABSL_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(values, d_values, n * sizeof(float), cudaMemcpyDeviceToHost, stream_),
        "TileEncoder values cudaMemcpyAsync"));
    return CudaStatus(cudaStreamSynchronize(stream_), "TileEncoder cudaStreamSynchronize");
  }

  // Buffers for at least num_tiles tiles; the old ones go first so peak memory stays one set.
  absl::Status Reserve(int64_t num_tiles) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (num_tiles <= capacity_) return absl::OkStatus();
    ABSL_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(stream_), "TileEncoder grow"));
    capacity_ = 0;
    tiles_ = DeviceMemory();
    states_ = DeviceMemory();
    values_ = DeviceMemory();
    const size_t n = static_cast<size_t>(num_tiles * kTile);
    ABSL_ASSIGN_OR_RETURN(tiles_, DeviceMemory::Allocate(n * sizeof(float), "TileEncoder tiles"));
    ABSL_ASSIGN_OR_RETURN(states_,
                          DeviceMemory::Allocate(n * sizeof(uint16_t), "TileEncoder states"));
    ABSL_ASSIGN_OR_RETURN(values_, DeviceMemory::Allocate(n * sizeof(float), "TileEncoder values"));
    capacity_ = num_tiles;
    return absl::OkStatus();
  }

  const int device_;
  const cudaStream_t stream_;
  // Encode is const (the interface's) yet reuses these; the lock makes overlapping calls wait.
  mutable absl::Mutex mu_;
  mutable DeviceMemory tiles_ ABSL_GUARDED_BY(mu_);
  mutable DeviceMemory states_ ABSL_GUARDED_BY(mu_);
  mutable DeviceMemory values_ ABSL_GUARDED_BY(mu_);
  mutable int64_t capacity_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<exl3::quantize::TileEncoder>> NewCudaTileEncoder(int device) {
  absl::StatusOr<int> count = VisibleDeviceCount();
  if (!count.ok()) return OnDevice(device, count.status());
  if (device < 0 || device >= *count) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cuda:%d: this process sees %d CUDA devices", device, *count));
  }
  DeviceGuard guard(device);
  cudaStream_t stream = nullptr;
  ABSL_RETURN_IF_ERROR(
      OnDevice(device, CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                                  "TileEncoder cudaStreamCreateWithFlags")));
  return std::make_unique<CudaTileEncoder>(device, stream);
}

}  // namespace twinspan::cuda
