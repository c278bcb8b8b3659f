// Host side of KvCopy: the checks of cpu::KvCopy, then KvCache::CopyRows.
#include "absl/strings/str_format.h"
#include "kernels/cuda/kv_copy.cuh"

namespace twinspan::cuda {
namespace {

const char* DtypeName(cpu::KvDtype dtype) { return dtype == cpu::KvDtype::kF32 ? "f32" : "bf16"; }

absl::Status CheckRange(const char* which, const KvCacheView& kv, int64_t first, int64_t rows) {
  if (first < 0 || first + rows > kv.capacity) {
    return absl::OutOfRangeError(
        absl::StrFormat("KvCopy: %s positions [%d, %d) outside its capacity %d", which, first,
                        first + rows, kv.capacity));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status KvCopy(const Context& ctx, const KvCache& src, int64_t src_first, KvCache& dst,
                    int64_t dst_first, int64_t rows) {
  if (rows < 0) return absl::InvalidArgumentError(absl::StrFormat("KvCopy: rows %d", rows));
  if (&src == &dst) return absl::InvalidArgumentError("KvCopy: src and dst are the same cache");
  const KvCacheView& s = src.view();
  const KvCacheView& d = dst.view();
  if (s.dtype != d.dtype || s.kv_heads != d.kv_heads || s.head_dim != d.head_dim) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "KvCopy: src is %s [%d heads x %d], dst is %s [%d heads x %d]", DtypeName(s.dtype),
        s.kv_heads, s.head_dim, DtypeName(d.dtype), d.kv_heads, d.head_dim));
  }
  if (absl::Status st = CheckRange("src", s, src_first, rows); !st.ok()) return st;
  if (absl::Status st = CheckRange("dst", d, dst_first, rows); !st.ok()) return st;
  if (rows == 0) return absl::OkStatus();
  return dst.CopyRows(ctx, src, src_first, dst_first, rows);
}

}  // namespace twinspan::cuda
