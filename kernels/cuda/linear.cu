// Host side of the dense linear: validation and the launch for the weight dtype, the row tile
// and whether x rows allow 16-byte loads (none of which changes a row's bits), and the kernel for
// the weight's width.
#include <cstdint>

#include "absl/strings/str_format.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/linear.cuh"
#include "kernels/cuda/linear_kernel.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda {
namespace {

namespace lk = linear_kernel;

// By the weight's shape alone: rows keep their bits.
bool Split(const lk::Params& p) { return p.n < lk::kSplitBelowColumns; }

template <typename Weight, int kRows, bool kVector>
void LaunchSplit(const lk::Params& p, cudaStream_t stream) {
  const int64_t blocks = (p.n + lk::kSplitCols - 1) / lk::kSplitCols;
  LaunchPdl(&lk::SplitKernel<Weight, kRows, kVector>, static_cast<unsigned>(blocks),
            lk::kSplitThreads, 0, stream, p);
}

template <typename Weight, int kRows, bool kVector>
void LaunchOne(const lk::Params& p, cudaStream_t stream) {
  if (Split(p)) return LaunchSplit<Weight, kRows, kVector>(p, stream);
  const int64_t blocks = (p.n + lk::kWarps * lk::kCols - 1) / (lk::kWarps * lk::kCols);
  // Plain launch: launched early, the draft's kernels cost it ~0.1 ms on the H200 (docs/perf.md).
  lk::DenseLinearKernel<Weight, kRows, kVector>
      <<<static_cast<unsigned>(blocks), lk::kThreads, 0, stream>>>(p);
}

template <typename Weight, bool kVector>
void LaunchRows(const lk::Params& p, cudaStream_t stream) {
  if (p.rows == 1) return LaunchOne<Weight, 1, kVector>(p, stream);
  if (p.rows == 2) return LaunchOne<Weight, 2, kVector>(p, stream);
  if (p.rows <= 4) return LaunchOne<Weight, 4, kVector>(p, stream);
  // A verify window of 16 in one pass of the narrow kernel's k loop, not two.
  if (p.rows > 8 && Split(p)) return LaunchSplit<Weight, 16, kVector>(p, stream);
  LaunchOne<Weight, 8, kVector>(p, stream);
}

template <typename Weight>
void LaunchWeight(const lk::Params& p, bool vector, cudaStream_t stream) {
  if (vector) return LaunchRows<Weight, true>(p, stream);
  LaunchRows<Weight, false>(p, stream);
}

}  // namespace

absl::Status Linear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                    const DenseWeightView& w, float* y, int64_t y_stride) {
  if (w.data == nullptr || w.out_features <= 0 || w.in_features <= 0) {
    return absl::InvalidArgumentError("Linear: empty weight");
  }
  if (w.row_pitch < w.in_features || w.row_pitch % lk::kLaneK != 0 ||
      reinterpret_cast<uintptr_t>(w.data) % 16 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Linear: weight row_pitch %d must be a multiple of 8 of at least in_features %d, data "
        "16-byte aligned",
        w.row_pitch, w.in_features));
  }
  if (rows < 0 || x_stride < w.in_features || y_stride < w.out_features) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Linear: rows %d, x_stride %d, y_stride %d for weight [%d, %d]", rows,
                        x_stride, y_stride, w.out_features, w.in_features));
  }
  if (rows == 0) return absl::OkStatus();
  if (x == nullptr || y == nullptr) {
    return absl::InvalidArgumentError("Linear: x and y must not be null");
  }
  const lk::Params p{x,           x_stride, rows,    w.data, w.out_features, w.in_features,
                     w.row_pitch, y,        y_stride};
  const bool vector = reinterpret_cast<uintptr_t>(x) % 16 == 0 && x_stride % 4 == 0 &&
                      w.in_features % lk::kLaneK == 0;
  switch (w.dtype) {
    case DenseDtype::kBF16:
      LaunchWeight<lk::Bf16Weight>(p, vector, ctx.stream);
      break;
    case DenseDtype::kF16:
      LaunchWeight<lk::F16Weight>(p, vector, ctx.stream);
      break;
    case DenseDtype::kF32:
      LaunchWeight<lk::F32Weight>(p, vector, ctx.stream);
      break;
  }
  return LaunchStatus("Linear launch");
}

}  // namespace twinspan::cuda
