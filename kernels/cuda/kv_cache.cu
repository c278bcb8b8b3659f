// Host side of the KV cache: stream-ordered storage, validation and the row writes.
#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/kv_cache.cuh"
#include "kernels/cuda/kv_cache_kernel.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda {
namespace {

absl::Status AllocateAsync(void** ptr, size_t bytes, cudaStream_t stream, cudaMemPool_t pool) {
  const cudaError_t e = pool != nullptr ? cudaMallocFromPoolAsync(ptr, bytes, pool, stream)
                                        : cudaMallocAsync(ptr, bytes, stream);
  if (e != cudaSuccess) *ptr = nullptr;
  return AllocStatus(e, bytes, "KvCache::Create");
}

}  // namespace

absl::StatusOr<std::unique_ptr<KvCache>> KvCache::Create(cpu::KvDtype dtype, int64_t capacity,
                                                         int64_t kv_heads, int64_t head_dim,
                                                         cudaStream_t stream, cudaMemPool_t pool) {
  if (capacity <= 0 || kv_heads <= 0 || head_dim <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "KvCache: capacity %d, kv_heads %d, head_dim %d", capacity, kv_heads, head_dim));
  }
  std::unique_ptr<KvCache> cache(new KvCache());
  cache->stream_ = stream;
  const size_t bytes = static_cast<size_t>(capacity * kv_heads * head_dim) *
                       (dtype == cpu::KvDtype::kF32 ? sizeof(float) : sizeof(uint16_t));
  ABSL_RETURN_IF_ERROR(AllocateAsync(&cache->k_, bytes, stream, pool));
  ABSL_RETURN_IF_ERROR(AllocateAsync(&cache->v_, bytes, stream, pool));
  cache->view_ = KvCacheView{cache->k_, cache->v_, dtype, capacity, kv_heads, head_dim};
  return cache;
}

KvCache::~KvCache() {
  if (k_ != nullptr) cudaFreeAsync(k_, stream_);
  if (v_ != nullptr) cudaFreeAsync(v_, stream_);
}

absl::Status KvCache::Write(const Context& ctx, const int64_t* positions, int64_t rows,
                            const float* k, int64_t k_stride, const float* v, int64_t v_stride) {
  namespace kk = kv_cache_kernel;
  if (rows < 0 || k_stride < row_size() || v_stride < row_size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("KvCache::Write: rows %d, k_stride %d, v_stride %d for rows of %d", rows,
                        k_stride, v_stride, row_size()));
  }
  if (rows == 0) return absl::OkStatus();
  if (positions == nullptr || k == nullptr || v == nullptr) {
    return absl::InvalidArgumentError("KvCache::Write: positions, k and v must not be null");
  }
  for (int64_t r = 0; r < rows; ++r) {
    if (positions[r] < 0 || positions[r] >= view_.capacity) {
      return absl::OutOfRangeError(absl::StrFormat(
          "KvCache: position %d outside capacity %d (row %d)", positions[r], view_.capacity, r));
    }
  }
  kk::Params p;
  p.k_cache = k_;
  p.v_cache = v_;
  p.bf16 = view_.dtype == cpu::KvDtype::kBF16;
  p.row_size = row_size();
  p.k_stride = k_stride;
  p.v_stride = v_stride;
  for (int64_t r0 = 0; r0 < rows; r0 += kk::kMaxRows) {
    const int64_t n = std::min<int64_t>(kk::kMaxRows, rows - r0);
    std::copy(positions + r0, positions + r0 + n, p.positions.v);
    p.rows = static_cast<int>(n);
    p.k = k + r0 * k_stride;
    p.v = v + r0 * v_stride;
    LaunchPdl(&kk::WriteKernel, static_cast<unsigned>(n), kk::kThreads, 0, ctx.stream, p);
    ABSL_RETURN_IF_ERROR(LaunchStatus("KvCache::Write launch"));
  }
  return absl::OkStatus();
}

absl::Status KvCache::CopyRows(const Context& ctx, const KvCache& src, int64_t src_first,
                               int64_t dst_first, int64_t rows) {
  const size_t element = view_.dtype == cpu::KvDtype::kF32 ? sizeof(float) : sizeof(uint16_t);
  const size_t row_bytes = static_cast<size_t>(row_size()) * element;
  const size_t bytes = static_cast<size_t>(rows) * row_bytes;
  const size_t from = static_cast<size_t>(src_first) * row_bytes;
  const size_t to = static_cast<size_t>(dst_first) * row_bytes;
  for (auto [d, s] : {std::pair<void*, const void*>{k_, src.k_}, {v_, src.v_}}) {
    const cudaError_t e =
        cudaMemcpyAsync(static_cast<char*>(d) + to, static_cast<const char*>(s) + from, bytes,
                        cudaMemcpyDeviceToDevice, ctx.stream);
    if (e != cudaSuccess) {
      return absl::InternalError(
          absl::StrFormat("KvCopy: copy of %d bytes failed: %s", bytes, cudaGetErrorString(e)));
    }
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cuda
