// One attention layer's key/value cache for one sequence: slot p holds the K and V rows of the
// token at absolute position p. bf16 is the serving default; f32 exists for golden tests against
// fp32 references (bf16 rounding of K/V alone moves logits by more than their 1e-4 tolerance).
#ifndef TWINSPAN_KERNELS_CPU_KV_CACHE_H_
#define TWINSPAN_KERNELS_CPU_KV_CACHE_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace twinspan::cpu {

enum class KvDtype { kF32, kBF16 };

// Not thread-safe for writes; concurrent reads (Attention) are fine. Movable, not copyable.
class KvCache {
 public:
  KvCache() = default;
  KvCache(KvCache&&) = default;
  KvCache& operator=(KvCache&&) = default;

  // Room for `capacity` positions of kv_heads x head_dim keys and values. Memory is reserved, not
  // touched, so an unused tail costs no pages. InvalidArgument for a non-positive dimension;
  // ResourceExhausted naming the bytes when the allocation fails.
  static absl::StatusOr<KvCache> Create(KvDtype dtype, int64_t capacity, int64_t kv_heads,
                                        int64_t head_dim);

  KvDtype dtype() const { return dtype_; }
  int64_t capacity() const { return capacity_; }
  int64_t kv_heads() const { return kv_heads_; }
  int64_t head_dim() const { return head_dim_; }
  int64_t row_size() const { return kv_heads_ * head_dim_; }

  // Stores one position's keys and values (row_size() floats each; bf16 rounds to nearest even).
  // OutOfRange naming the position and capacity when position is outside [0, capacity).
  absl::Status Write(int64_t position, const float* keys, const float* values);

  // Copies position's key / value of kv head `head` as head_dim floats.
  // REQUIRES: 0 <= position < capacity(), 0 <= head < kv_heads().
  void ReadKey(int64_t position, int64_t head, float* out) const;
  void ReadValue(int64_t position, int64_t head, float* out) const;
  // Copies `count` consecutive positions from `first` of kv head `head` as [count, head_dim].
  // REQUIRES: 0 <= first, first + count <= capacity(), 0 <= head < kv_heads().
  void ReadKeys(int64_t first, int64_t count, int64_t head, float* out) const;
  void ReadValues(int64_t first, int64_t count, int64_t head, float* out) const;

  // The storage of all keys / values, [capacity, kv_heads, head_dim] elements: floats for kF32,
  // bf16 bits (uint16_t) for kBF16. For ops that widen rows their own way (vector code).
  const void* key_data() const {
    return dtype_ == KvDtype::kF32 ? static_cast<const void*>(k32_.get()) : k16_.get();
  }
  const void* value_data() const {
    return dtype_ == KvDtype::kF32 ? static_cast<const void*>(v32_.get()) : v16_.get();
  }

  // Copies `rows` positions of `src` from src_first to this cache from dst_first, bits as stored
  // (cpu::KvCopy checks the arguments). REQUIRES: the same dtype and row size, both ranges inside
  // their caches, and `src` not this cache.
  void CopyRows(const KvCache& src, int64_t src_first, int64_t dst_first, int64_t rows);

 private:
  KvDtype dtype_ = KvDtype::kBF16;
  int64_t capacity_ = 0;
  int64_t kv_heads_ = 0;
  int64_t head_dim_ = 0;
  std::unique_ptr<float[]> k32_, v32_;
  std::unique_ptr<uint16_t[]> k16_, v16_;
};

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_KV_CACHE_H_
