#include "kernels/cpu/kv_cache.h"

#include <bit>
#include <cstring>
#include <new>
#include <type_traits>

#include "absl/strings/str_format.h"
#include "common/safetensors/half.h"

namespace twinspan::cpu {

absl::StatusOr<KvCache> KvCache::Create(KvDtype dtype, int64_t capacity, int64_t kv_heads,
                                        int64_t head_dim) {
  if (capacity <= 0 || kv_heads <= 0 || head_dim <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "KvCache: capacity %d, kv_heads %d, head_dim %d", capacity, kv_heads, head_dim));
  }
  KvCache cache;
  cache.dtype_ = dtype;
  cache.capacity_ = capacity;
  cache.kv_heads_ = kv_heads;
  cache.head_dim_ = head_dim;
  const size_t elements = static_cast<size_t>(capacity * kv_heads * head_dim);
  if (dtype == KvDtype::kF32) {
    cache.k32_.reset(new (std::nothrow) float[elements]);
    cache.v32_.reset(new (std::nothrow) float[elements]);
    if (cache.k32_ == nullptr || cache.v32_ == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("KvCache: cannot allocate %d bytes", 2 * elements * sizeof(float)));
    }
  } else {
    cache.k16_.reset(new (std::nothrow) uint16_t[elements]);
    cache.v16_.reset(new (std::nothrow) uint16_t[elements]);
    if (cache.k16_ == nullptr || cache.v16_ == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("KvCache: cannot allocate %d bytes", 2 * elements * sizeof(uint16_t)));
    }
  }
  return cache;
}

absl::Status KvCache::Write(int64_t position, const float* keys, const float* values) {
  if (position < 0 || position >= capacity_) {
    return absl::OutOfRangeError(
        absl::StrFormat("KvCache: position %d outside capacity %d", position, capacity_));
  }
  const int64_t n = row_size();
  const size_t offset = static_cast<size_t>(position * n);
  if (dtype_ == KvDtype::kF32) {
    std::memcpy(k32_.get() + offset, keys, n * sizeof(float));
    std::memcpy(v32_.get() + offset, values, n * sizeof(float));
    return absl::OkStatus();
  }
  for (int64_t i = 0; i < n; ++i) {
    k16_[offset + i] = FloatToBFloat16(keys[i]);
    v16_[offset + i] = FloatToBFloat16(values[i]);
  }
  return absl::OkStatus();
}

void KvCache::ReadKey(int64_t position, int64_t head, float* out) const {
  const size_t offset = static_cast<size_t>(position * row_size() + head * head_dim_);
  if (dtype_ == KvDtype::kF32) {
    std::memcpy(out, k32_.get() + offset, head_dim_ * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < head_dim_; ++i) out[i] = BFloat16ToFloat(k16_[offset + i]);
}

void KvCache::ReadValue(int64_t position, int64_t head, float* out) const {
  const size_t offset = static_cast<size_t>(position * row_size() + head * head_dim_);
  if (dtype_ == KvDtype::kF32) {
    std::memcpy(out, v32_.get() + offset, head_dim_ * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < head_dim_; ++i) out[i] = BFloat16ToFloat(v16_[offset + i]);
}

namespace {

// Rows of one kv head out of a [positions, kv_heads, head_dim] buffer; bf16 widens by a shift.
template <typename T>
void ReadRows(const T* base, int64_t row_size, int64_t head_dim, int64_t first, int64_t count,
              int64_t head, float* out) {
  for (int64_t i = 0; i < count; ++i) {
    const T* src = base + (first + i) * row_size + head * head_dim;
    float* dst = out + i * head_dim;
    if constexpr (std::is_same_v<T, float>) {
      std::memcpy(dst, src, head_dim * sizeof(float));
    } else {
      for (int64_t j = 0; j < head_dim; ++j) {
        dst[j] = std::bit_cast<float>(static_cast<uint32_t>(src[j]) << 16);
      }
    }
  }
}

}  // namespace

void KvCache::ReadKeys(int64_t first, int64_t count, int64_t head, float* out) const {
  if (dtype_ == KvDtype::kF32) {
    ReadRows(k32_.get(), row_size(), head_dim_, first, count, head, out);
  } else {
    ReadRows(k16_.get(), row_size(), head_dim_, first, count, head, out);
  }
}

void KvCache::ReadValues(int64_t first, int64_t count, int64_t head, float* out) const {
  if (dtype_ == KvDtype::kF32) {
    ReadRows(v32_.get(), row_size(), head_dim_, first, count, head, out);
  } else {
    ReadRows(v16_.get(), row_size(), head_dim_, first, count, head, out);
  }
}

void KvCache::CopyRows(const KvCache& src, int64_t src_first, int64_t dst_first, int64_t rows) {
  const size_t n = static_cast<size_t>(rows * row_size());
  const size_t from = static_cast<size_t>(src_first * row_size());
  const size_t to = static_cast<size_t>(dst_first * row_size());
  if (dtype_ == KvDtype::kF32) {
    std::memcpy(k32_.get() + to, src.k32_.get() + from, n * sizeof(float));
    std::memcpy(v32_.get() + to, src.v32_.get() + from, n * sizeof(float));
    return;
  }
  std::memcpy(k16_.get() + to, src.k16_.get() + from, n * sizeof(uint16_t));
  std::memcpy(v16_.get() + to, src.v16_.get() + from, n * sizeof(uint16_t));
}

}  // namespace twinspan::cpu
