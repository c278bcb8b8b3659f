#include "kernels/cpu/linear.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "kernels/cpu/dense_linear_avx2.h"
#include "kernels/cpu/dot.h"
#include "kernels/cpu/exl3_linear.h"

namespace twinspan::cpu {
namespace {

// Output columns per parallel task: 16 columns keep a task above a few microseconds at hidden 128.
constexpr int64_t kColumnsPerTask = 16;

// Computes columns [j0, j1) of y for all rows; rows go four at a time to share each weight load.
void DenseColumns(const float* x, int64_t x_stride, int64_t rows, const LinearWeight& w, float* y,
                  int64_t y_stride, int64_t j0, int64_t j1) {
  const int64_t k = w.in_features();
  for (int64_t j = j0; j < j1; ++j) {
    const float* wj = w.dense_row(j);
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
      float out[4];
      Dot4(x + r * x_stride, x + (r + 1) * x_stride, x + (r + 2) * x_stride, x + (r + 3) * x_stride,
           wj, k, out);
      for (int i = 0; i < 4; ++i) y[(r + i) * y_stride + j] = out[i];
    }
    for (; r < rows; ++r) y[r * y_stride + j] = Dot(x + r * x_stride, wj, k);
  }
}

}  // namespace

absl::StatusOr<LinearWeight> LinearWeight::Dense(int64_t out_features, int64_t in_features,
                                                 std::vector<float> values) {
  if (out_features <= 0 || in_features <= 0 ||
      static_cast<int64_t>(values.size()) != out_features * in_features) {
    return absl::InvalidArgumentError(
        absl::StrFormat("LinearWeight::Dense: %d values for shape [%d, %d]", values.size(),
                        out_features, in_features));
  }
  LinearWeight w;
  w.out_features_ = out_features;
  w.in_features_ = in_features;
  w.dense_ = std::make_shared<const std::vector<float>>(std::move(values));
  return w;
}

LinearWeight LinearWeight::Exl3(exl3::Weight w) {
  LinearWeight out;
  out.out_features_ = w.n();
  out.in_features_ = w.k();
  out.exl3_ = std::make_shared<const exl3::Weight>(std::move(w));
  return out;
}

LinearWeight LinearWeight::Q4(Q4Weight w) {
  LinearWeight out;
  out.out_features_ = w.out_features();
  out.in_features_ = w.in_features();
  out.q4_ = std::make_shared<const Q4Weight>(std::move(w));
  return out;
}

absl::Status Linear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                    const LinearWeight& w, float* y, int64_t y_stride) {
  if (w.empty()) return absl::InvalidArgumentError("Linear: empty weight");
  if (rows < 0 || x_stride < w.in_features() || y_stride < w.out_features()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Linear: rows %d, x_stride %d, y_stride %d for weight [%d, %d]", rows,
                        x_stride, y_stride, w.out_features(), w.in_features()));
  }
  if (rows == 0) return absl::OkStatus();
  if (w.is_exl3()) return Exl3Linear(ctx, x, x_stride, rows, *w.exl3(), y, y_stride);
  if (w.is_q4()) return Q4Linear(ctx, x, x_stride, rows, *w.q4(), y, y_stride);
  const int64_t n = w.out_features();
  const int64_t tasks = (n + kColumnsPerTask - 1) / kColumnsPerTask;
  // About four tasks per thread balances uneven threads without paying the pool per column.
  const int64_t threads = ctx.pool == nullptr ? 1 : ctx.pool->num_threads();
  const int64_t grain = std::max<int64_t>(1, tasks / (4 * threads));
  ParallelFor(ctx.pool, tasks, grain, [&](int64_t t0, int64_t t1) {
    const int64_t j0 = t0 * kColumnsPerTask, j1 = std::min(n, t1 * kColumnsPerTask);
#if defined(__x86_64__)
    if (ctx.isa == Isa::kAvx512) {
      return DenseColumnsAvx512(x, x_stride, rows, w.dense_row(0), w.in_features(), y, y_stride, j0,
                                j1);
    }
    if (HasAvx2(ctx.isa)) {
      return DenseColumnsAvx2(x, x_stride, rows, w.dense_row(0), w.in_features(), y, y_stride, j0,
                              j1);
    }
#endif
    DenseColumns(x, x_stride, rows, w, y, y_stride, j0, j1);
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
