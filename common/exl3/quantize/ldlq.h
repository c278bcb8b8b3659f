// LDLQ (exl3-format.md section 5.4): the rotated weight's 16-row strips are encoded from the
// bottom up, each strip's targets moved by the error already made below it through the block-LDL
// factor of the Hessian, so the error left is the one H weighs least.
#ifndef TWINSPAN_COMMON_EXL3_QUANTIZE_LDLQ_H_
#define TWINSPAN_COMMON_EXL3_QUANTIZE_LDLQ_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/exl3/quantize/tile_encoder.h"
#include "kernels/cpu/parallel.h"

namespace twinspan::exl3::quantize {

struct LdlqResult {
  std::vector<float> quantized;  // [k, n]: the codebook values chosen, rotated basis.
  std::vector<uint16_t> states;  // [k / 16, n / 16, 256]: each tile's states, position order.
};

// w [k, n] rotated; l [k, k] from LdlFactor, or empty to encode every strip as it is (no
// calibration). Strip [r, r + 16) is encoded from w[r..] + sum over rows s below it (in its
// 128-row span directly, beyond it through a running product) of l[s, r..]^T (w[s] - q[s]).
// InvalidArgument for sizes that are not multiples of 128 or an l of the wrong size; the
// encoder's errors.
absl::StatusOr<LdlqResult> Ldlq(cpu::ThreadPool* pool, const TileEncoder& encoder,
                                const TileCode& code, const float* w, int64_t k, int64_t n,
                                std::span<const float> l);

}  // namespace twinspan::exl3::quantize

#endif  // TWINSPAN_COMMON_EXL3_QUANTIZE_LDLQ_H_
