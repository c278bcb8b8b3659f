// One attention layer's K/V cache for one sequence on the GPU: the twin of kernels/cpu/kv_cache.h.
// Slot p holds the K and V rows of the token at absolute position p, [capacity, kv_heads,
// head_dim] each, in bf16 (the serving default) or f32. bf16 rounds to nearest even with the CPU
// cache's rule (NaN stays a quiet NaN), so both caches hold the same bits.
#ifndef TWINSPAN_KERNELS_CUDA_KV_CACHE_CUH_
#define TWINSPAN_KERNELS_CUDA_KV_CACHE_CUH_

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/cpu/kv_cache.h"
#include "kernels/cuda/context.cuh"

namespace twinspan::cuda {

// What Attention reads: the cache's storage and shape. Non-owning.
struct KvCacheView {
  const void* k = nullptr;  // [capacity, kv_heads, head_dim] of dtype.
  const void* v = nullptr;
  cpu::KvDtype dtype = cpu::KvDtype::kBF16;
  int64_t capacity = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
};

// Writes are ordered on the stream given to Write; not thread-safe. Move-only through unique_ptr.
class KvCache {
 public:
  // Room for `capacity` positions, uninitialized, allocated in stream order on `stream` from `pool`
  // (the device's default pool when null) and freed the same way on destruction, so the cache must
  // not outlive the stream. InvalidArgument for a non-positive dimension; ResourceExhausted naming
  // the bytes when the device is out of memory.
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(cpu::KvDtype dtype, int64_t capacity,
                                                         int64_t kv_heads, int64_t head_dim,
                                                         cudaStream_t stream,
                                                         cudaMemPool_t pool = nullptr);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  const KvCacheView& view() const { return view_; }
  int64_t row_size() const { return view_.kv_heads * view_.head_dim; }

  // Stores rows r < rows of keys (k + r * k_stride) and values (v + r * v_stride), row_size()
  // floats each in device memory, at host `positions`[r]; a repeated position keeps the last row,
  // and either every row is written or none (the twin of cpu::KvWrite). OutOfRange naming the
  // position and capacity for a position outside [0, capacity); InvalidArgument for a stride below
  // row_size(), rows < 0 or a null pointer. Asynchronous on ctx.stream.
  absl::Status Write(const Context& ctx, const int64_t* positions, int64_t rows, const float* k,
                     int64_t k_stride, const float* v, int64_t v_stride);

  // Copies `rows` positions of `src` from src_first to this cache from dst_first, bits as stored,
  // asynchronous on ctx.stream (cuda::KvCopy checks the arguments). REQUIRES: the same dtype and
  // row size, both ranges inside their caches, `src` not this cache. Internal when a copy fails.
  absl::Status CopyRows(const Context& ctx, const KvCache& src, int64_t src_first,
                        int64_t dst_first, int64_t rows);

 private:
  KvCache() = default;

  cudaStream_t stream_ = nullptr;  // Frees the storage in order after the last op that used it.
  void* k_ = nullptr;
  void* v_ = nullptr;
  KvCacheView view_;
};

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_KV_CACHE_CUH_
