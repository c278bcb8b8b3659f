#include "kernels/cpu/add.h"

#include "absl/strings/str_format.h"

namespace twinspan::cpu {

absl::Status Add(const Context& ctx, const float* a, const float* b, int64_t n, float* out) {
  if (n < 0 || (n > 0 && (a == nullptr || b == nullptr || out == nullptr))) {
    return absl::InvalidArgumentError(absl::StrFormat("Add: n %d with a null array", n));
  }
  // An add is one flop: 16K values a task keeps the pool's overhead small.
  ParallelFor(ctx.pool, n, 1 << 14, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) out[i] = a[i] + b[i];
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
