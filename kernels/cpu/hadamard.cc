#include "kernels/cpu/hadamard.h"

#include "absl/strings/str_cat.h"
#include "common/exl3/format.h"
#include "common/exl3/hadamard.h"

namespace twinspan::cpu {

absl::Status Hadamard128(float* x, int64_t rows, int64_t cols, int64_t stride) {
  if (cols <= 0 || cols % exl3::kHadamardSize != 0 || stride < cols || rows < 0 ||
      (rows > 0 && x == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Hadamard128: rows ", rows, ", cols ", cols, ", stride ", stride,
                     " (cols must be a positive multiple of 128 and stride >= cols)"));
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; c += exl3::kHadamardSize) exl3::Hadamard128(x + r * stride + c);
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
