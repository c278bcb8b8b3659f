// The CUDA backend's buffer and handle types (internal to kernels/cuda and its tests).
#ifndef TWINSPAN_KERNELS_CUDA_CUDA_BACKEND_HANDLES_H_
#define TWINSPAN_KERNELS_CUDA_CUDA_BACKEND_HANDLES_H_

#include <cuda_runtime.h>

#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/backend/backend.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/dense_weight.h"
#include "kernels/cuda/embedding_table.h"
#include "kernels/cuda/exl3_span_linear.cuh"
#include "kernels/cuda/exl3_weight.h"
#include "kernels/cuda/kv_cache.cuh"
#include "kernels/cuda/q4_linear_weight.h"

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

// A dense weight (the CUDA Linear), a Q4 weight (Q4Linear), or an EXL3 weight or column view
// (Exl3Linear) whose device memory `owner` keeps alive.
class CudaLinear final : public backend::LinearHandle {
 public:
  enum class Kind { kDense, kQ4, kExl3 };

  explicit CudaLinear(DeviceDenseWeight dense)
      : kind_(Kind::kDense),
        dense_(std::move(dense)),
        in_features_(dense_.view().in_features),
        out_features_(dense_.view().out_features) {}
  explicit CudaLinear(DeviceQ4Weight q4)
      : kind_(Kind::kQ4),
        q4_(std::move(q4)),
        in_features_(q4_.view().k),
        out_features_(q4_.view().n) {}
  CudaLinear(std::shared_ptr<const void> owner, const Exl3DeviceWeight& view)
      : kind_(Kind::kExl3),
        owner_(std::move(owner)),
        view_(view),
        in_features_(view.k),
        out_features_(view.n) {}

  int64_t in_features() const override { return in_features_; }
  int64_t out_features() const override { return out_features_; }
  Kind kind() const { return kind_; }
  const DeviceDenseWeight& dense() const { return dense_; }
  const DeviceQ4Weight& q4() const { return q4_; }
  const Exl3DeviceWeight& exl3() const { return view_; }

 private:
  Kind kind_;
  DeviceDenseWeight dense_;
  DeviceQ4Weight q4_;
  std::shared_ptr<const void> owner_;  // A DeviceExl3Weight shared by views, or DeviceExl3Views.
  Exl3DeviceWeight view_;
  int64_t in_features_ = 0;
  int64_t out_features_ = 0;
};

// The span views of one EXL3 head: Exl3SpanLinear's spans, in groups of kMaxExl3Spans a launch.
class CudaSpanHead final : public backend::SpanHeadHandle {
 public:
  CudaSpanHead(std::vector<std::shared_ptr<const void>> owners, std::vector<Exl3DeviceSpan> spans)
      : owners_(std::move(owners)), spans_(std::move(spans)) {
    for (const Exl3DeviceSpan& s : spans_) columns_ += s.size;
  }
  int64_t in_features() const override { return spans_[0].view.k; }
  int64_t columns() const override { return columns_; }
  const std::vector<Exl3DeviceSpan>& spans() const { return spans_; }

 private:
  std::vector<std::shared_ptr<const void>> owners_;  // Keep the spans' device memory.
  std::vector<Exl3DeviceSpan> spans_;
  int64_t columns_ = 0;
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
