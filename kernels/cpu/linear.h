// y = x @ W^T for a linear layer's weight W in HF orientation [out_features, in_features].
//
// Row-invariant: every output y[r, j] is Dot(x[r], W[j]) (kernels/cpu/dot.h), whose order depends
// on in_features only, so a row's result never depends on how many rows share the call, on
// threads, or on ctx.isa (kernels/cpu/dense_linear_avx2.h computes the same Dot).
#ifndef TWINSPAN_KERNELS_CPU_LINEAR_H_
#define TWINSPAN_KERNELS_CPU_LINEAR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/exl3/weight.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/q4_linear.h"

namespace twinspan::cpu {

// A linear layer's weight: dense fp32 (loaded from bf16/fp16/fp32), an EXL3 weight (or column
// view), or an affine 4-bit Q4 weight (kernels/cpu/q4_linear.h). Immutable after construction, so
// any number of threads may use it. Cheap to copy (the data is shared). An EXL3 weight's checkpoint
// must outlive every copy.
class LinearWeight {
 public:
  LinearWeight() = default;

  // `values` is [out_features, in_features] row-major. InvalidArgument when the sizes disagree or a
  // dimension is not positive.
  static absl::StatusOr<LinearWeight> Dense(int64_t out_features, int64_t in_features,
                                            std::vector<float> values);

  // out_features = w.n(), in_features = w.k() (EXL3 stores W as [k, n]).
  static LinearWeight Exl3(exl3::Weight w);

  // out_features = w.out_features(), in_features = w.in_features().
  static LinearWeight Q4(Q4Weight w);

  // A copy that says which checkpoint prefix it came from ("model.layers.0.mlp.up_proj"), so a
  // backend wrapper can tell linears apart (the quantizer's calibration capture).
  LinearWeight Named(std::string source) const {
    LinearWeight w = *this;
    w.source_ = std::move(source);
    return w;
  }
  // Empty for a weight made in memory (a stacked or tied one).
  const std::string& source() const { return source_; }

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  bool empty() const { return dense_ == nullptr && exl3_ == nullptr && q4_ == nullptr; }
  bool is_exl3() const { return exl3_ != nullptr; }
  bool is_q4() const { return q4_ != nullptr; }

  // Row j of W (the weights of output j), in_features floats. REQUIRES: dense (!is_exl3(),
  // !is_q4()).
  const float* dense_row(int64_t j) const { return dense_->data() + j * in_features_; }
  // The EXL3 weight, or null for a dense one.
  const exl3::Weight* exl3() const { return exl3_.get(); }
  // The Q4 weight, or null for another kind.
  const Q4Weight* q4() const { return q4_.get(); }

 private:
  int64_t out_features_ = 0;
  int64_t in_features_ = 0;
  std::shared_ptr<const std::vector<float>> dense_;
  std::shared_ptr<const exl3::Weight> exl3_;
  std::shared_ptr<const Q4Weight> q4_;
  std::string source_;
};

// y[rows, out_features] = x[rows, in_features] @ W^T. `x` and `y` are row-major with row strides
// `x_stride` and `y_stride` (in floats; pass in_features / out_features for packed rows) and must
// not overlap. InvalidArgument for an empty weight, rows < 0, or a stride smaller than the row.
absl::Status Linear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                    const LinearWeight& w, float* y, int64_t y_stride);

// Packed-rows convenience form of the above.
inline absl::Status Linear(const Context& ctx, const float* x, int64_t rows, const LinearWeight& w,
                           float* y) {
  return Linear(ctx, x, w.in_features(), rows, w, y, w.out_features());
}

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_LINEAR_H_
