// The CUDA backend's buffer and handle types (internal to cuda_backend.cc and its tests).
#ifndef TWINSPAN_KERNELS_CUDA_CUDA_BACKEND_HANDLES_H_
#define TWINSPAN_KERNELS_CUDA_CUDA_BACKEND_HANDLES_H_

#include <cuda_runtime.h>

#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "kernels/backend/backend.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/dense_weight.h"
#include "kernels/cuda/embedding_table.h"
#include "kernels/cuda/exl3_weight.h"
#include "kernels/cuda/kv_cache.cuh"

namespace twinspan::cuda {

// Makes `device` current for its scope and restores the caller's device.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) cudaSetDevice(device);
  }
  ~DeviceGuard() {
    int now = -1;
    if (previous_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous_) {
      cudaSetDevice(previous_);
    }
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// Pool memory, allocated and freed in stream order.
class PoolBuffer final : public backend::Buffer {
 public:
  // ResourceExhausted naming the bytes when the pool cannot grow. REQUIRES: `device` current.
  static absl::StatusOr<std::unique_ptr<backend::Buffer>> Allocate(size_t bytes, int device,
                                                                   cudaStream_t stream,
                                                                   cudaMemPool_t pool) {
    std::unique_ptr<PoolBuffer> buffer(new PoolBuffer(device, stream));
    if (bytes > 0) {
      const cudaError_t e = cudaMallocFromPoolAsync(&buffer->ptr_, bytes, pool, stream);
      if (e != cudaSuccess) {
        buffer->ptr_ = nullptr;
        return AllocStatus(e, bytes, "CUDA backend Allocate");
      }
    }
    buffer->bytes_ = bytes;
    return std::unique_ptr<backend::Buffer>(std::move(buffer));
  }
  ~PoolBuffer() override {
    if (ptr_ == nullptr) return;
    DeviceGuard guard(device_);
    cudaFreeAsync(ptr_, stream_);
  }

  void* data() override { return ptr_; }
  const void* data() const override { return ptr_; }
  size_t bytes() const override { return bytes_; }

 private:
  PoolBuffer(int device, cudaStream_t stream) : device_(device), stream_(stream) {}

  const int device_;
  const cudaStream_t stream_;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A dense weight (the CUDA Linear) or an EXL3 weight or column view (Exl3Linear).
class CudaLinear final : public backend::LinearHandle {
 public:
  explicit CudaLinear(DeviceDenseWeight dense)
      : dense_(std::move(dense)),
        in_features_(dense_.view().in_features),
        out_features_(dense_.view().out_features) {}
  CudaLinear(std::shared_ptr<const DeviceExl3Weight> stored, const Exl3DeviceWeight& view)
      : stored_(std::move(stored)), view_(view), in_features_(view.k), out_features_(view.n) {}

  int64_t in_features() const override { return in_features_; }
  int64_t out_features() const override { return out_features_; }
  bool is_exl3() const { return stored_ != nullptr; }
  const DeviceDenseWeight& dense() const { return dense_; }
  const Exl3DeviceWeight& exl3() const { return view_; }

 private:
  DeviceDenseWeight dense_;
  std::shared_ptr<const DeviceExl3Weight> stored_;  // Shared by the views of one matrix.
  Exl3DeviceWeight view_;
  int64_t in_features_ = 0;
  int64_t out_features_ = 0;
};

class CudaEmbedding final : public backend::EmbeddingHandle {
 public:
  explicit CudaEmbedding(DeviceEmbeddingTable table) : table_(std::move(table)) {}
  int64_t rows() const override { return table_.view().rows; }
  int64_t dim() const override { return table_.view().dim; }
  const DeviceEmbeddingTable& table() const { return table_; }

 private:
  DeviceEmbeddingTable table_;
};

class CudaKvCache final : public backend::KvCacheHandle {
 public:
  explicit CudaKvCache(std::unique_ptr<KvCache> cache) : cache_(std::move(cache)) {}
  int64_t capacity() const override { return cache_->view().capacity; }
  int64_t kv_heads() const override { return cache_->view().kv_heads; }
  int64_t head_dim() const override { return cache_->view().head_dim; }
  cpu::KvDtype dtype() const override { return cache_->view().dtype; }
  KvCache& cache() { return *cache_; }
  const KvCache& cache() const { return *cache_; }

 private:
  std::unique_ptr<KvCache> cache_;
};

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_CUDA_BACKEND_HANDLES_H_
