// A linear's input Hessian H = sum x^T x / rows over calibration rows, and the factor LDLQ uses:
// H damped, carried into the rotated basis (signs or scales, then the 128-block Hadamard on both
// sides) and block-LDL factored with 16 x 16 blocks (exl3-format.md section 5.2).
#ifndef TWINSPAN_COMMON_EXL3_QUANTIZE_HESSIAN_H_
#define TWINSPAN_COMMON_EXL3_QUANTIZE_HESSIAN_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/cpu/parallel.h"

namespace twinspan::exl3::quantize {

// Not thread-safe; one per input (q, k and v share theirs).
class HessianAccumulator {
 public:
  explicit HessianAccumulator(int64_t k);

  // Adds the rows of x[rows, k] (row stride `stride` floats). A row holding inf or NaN is dropped
  // (counted in dropped()): an fp16 overflow upstream must not poison H.
  void Add(cpu::ThreadPool* pool, const float* x, int64_t rows, int64_t stride);

  int64_t k() const { return k_; }
  int64_t rows() const { return rows_; }  // Rows kept.
  int64_t dropped() const { return dropped_; }

  // H = sum / rows(), [k, k] row-major, exactly symmetric; empty when no row was kept.
  std::vector<float> Mean() const;

 private:
  int64_t k_;
  int64_t rows_ = 0;
  int64_t dropped_ = 0;
  std::vector<float> sum_;  // [k, k]
};

struct LdlOptions {
  double sigma_reg = 0.025;  // Damping: H += sigma_reg * mean(diag H) * I.
  int max_retries = 10;      // Each failed Cholesky adds 2 * sigma_reg * mean(diag) more.
};

// L [k, k] for LDLQ, fp32 row-major: the block-LDL factor of
// H' = B diag(scales) (H + damping) diag(scales) B (B the 128-block Hadamard), unit lower
// triangular by 16 x 16 blocks, with its diagonal blocks zeroed (a strip never feeds itself).
// `scales` are the rotated basis's input scales (suh, or only their signs). InvalidArgument when
// the sizes disagree or k % 128 != 0; FailedPrecondition when H' stays indefinite after the
// retries.
absl::StatusOr<std::vector<float>> LdlFactor(cpu::ThreadPool* pool, std::span<const float> hessian,
                                             std::span<const float> scales,
                                             const LdlOptions& options);

}  // namespace twinspan::exl3::quantize

#endif  // TWINSPAN_COMMON_EXL3_QUANTIZE_HESSIAN_H_
