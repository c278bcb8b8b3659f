#include "kernels/cpu/kv_copy.h"

#include "absl/strings/str_format.h"

namespace twinspan::cpu {
namespace {

const char* DtypeName(KvDtype dtype) { return dtype == KvDtype::kF32 ? "f32" : "bf16"; }

absl::Status CheckRange(const char* which, const KvCache& kv, int64_t first, int64_t rows) {
  if (first < 0 || first + rows > kv.capacity()) {
    return absl::OutOfRangeError(
        absl::StrFormat("KvCopy: %s positions [%d, %d) outside its capacity %d", which, first,
                        first + rows, kv.capacity()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status KvCopy(const Context& /*ctx*/, const KvCache& src, int64_t src_first, KvCache& dst,
                    int64_t dst_first, int64_t rows) {
  if (rows < 0) return absl::InvalidArgumentError(absl::StrFormat("KvCopy: rows %d", rows));
  if (&src == &dst) return absl::InvalidArgumentError("KvCopy: src and dst are the same cache");
  if (src.dtype() != dst.dtype() || src.kv_heads() != dst.kv_heads() ||
      src.head_dim() != dst.head_dim()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "KvCopy: src is %s [%d heads x %d], dst is %s [%d heads x %d]", DtypeName(src.dtype()),
        src.kv_heads(), src.head_dim(), DtypeName(dst.dtype()), dst.kv_heads(), dst.head_dim()));
  }
  if (absl::Status s = CheckRange("src", src, src_first, rows); !s.ok()) return s;
  if (absl::Status s = CheckRange("dst", dst, dst_first, rows); !s.ok()) return s;
  if (rows > 0) dst.CopyRows(src, src_first, dst_first, rows);
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
