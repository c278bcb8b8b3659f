// Host side of the Q4 linear: validation, the (R, C) configuration and the launch of one or more
// weights. Device code is in q4_linear_kernel.cuh.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "kernels/cuda/q4_linear.cuh"
#include "kernels/cuda/q4_linear_kernel.cuh"
#include "kernels/cuda/shared_memory_limit.h"

namespace twinspan::cuda {
namespace {

namespace qk = q4_kernel;
static_assert(kMaxQ4Linears == qk::kMaxParts, "one launch holds every weight");

// Blocks per SM the row tiles aim to fill (two 256-thread blocks of 128 registers fit an SM).
constexpr int64_t kBlocksPerSm = 2;

bool Misaligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 != 0; }

// Blocks a weight of n outputs takes at `columns` columns a warp.
int64_t BlocksOf(int64_t n, int columns) {
  return (n + qk::kWarps * columns - 1) / (qk::kWarps * columns);
}

template <int R, int C>
cudaError_t Launch(const qk::Params& p, dim3 grid, int device, cudaStream_t stream) {
  constexpr int smem = qk::SmemBytes(R);
  if constexpr (smem > 48 * 1024) {
    const cudaError_t e = AllowSharedMemory<&qk::Q4LinearKernel<R, C>>(device, smem);
    if (e != cudaSuccess) return e;
  }
  // Plain launch: launched early, the draft's kernels cost it ~0.1 ms on the H200 (docs/perf.md).
  qk::Q4LinearKernel<R, C><<<grid, qk::kThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

template <int R>
cudaError_t LaunchColumns(int columns, const qk::Params& p, dim3 grid, int device,
                          cudaStream_t stream) {
  switch (columns) {
    case 4:
      return Launch<R, 4>(p, grid, device, stream);
    case 2:
      return Launch<R, 2>(p, grid, device, stream);
    default:
      return Launch<R, 1>(p, grid, device, stream);
  }
}

}  // namespace

absl::Status Q4Linears(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                       const Q4LinearOutput* outs, int count) {
  if (outs == nullptr || count < 1 || count > kMaxQ4Linears)
    return absl::InvalidArgumentError(
        absl::StrFormat("Q4Linears: %d weights; 1 to %d", count, kMaxQ4Linears));
  const int64_t k = outs[0].w != nullptr ? outs[0].w->k : 0;
  for (int i = 0; i < count; ++i) {
    const Q4DeviceWeight* w = outs[i].w;
    if (w == nullptr || !w->codes || !w->scale_offset)
      return absl::InvalidArgumentError(absl::StrFormat(
          "Q4Linear: weight %d: codes and scale_offset must be device pointers", i));
    if (w->n <= 0 || w->k <= 0 || w->k % qk::kGroup != 0 || w->n > INT32_MAX || w->k > INT32_MAX)
      return absl::InvalidArgumentError(absl::StrFormat(
          "Q4Linear: weight [n=%d, k=%d] needs positive sizes and k a multiple of 128", w->n,
          w->k));
    if (w->k != k)
      return absl::InvalidArgumentError(absl::StrFormat(
          "Q4Linears: weight %d has k=%d, weight 0 k=%d; one launch needs one k", i, w->k, k));
    if (outs[i].y_stride < w->n)
      return absl::InvalidArgumentError(absl::StrFormat(
          "Q4Linear: y_stride=%d at least n=%d (weight %d)", outs[i].y_stride, w->n, i));
    if (Misaligned(w->codes))
      return absl::InvalidArgumentError("Q4Linear: the codes must be 16-byte aligned");
  }
  if (rows < 0 || rows > INT32_MAX)
    return absl::InvalidArgumentError(absl::StrFormat("Q4Linear: rows = %d", rows));
  if (rows == 0) return absl::OkStatus();
  if (!x) return absl::InvalidArgumentError("Q4Linear: x and y must be device pointers");
  for (int i = 0; i < count; ++i)
    if (!outs[i].y) return absl::InvalidArgumentError("Q4Linear: x and y must be device pointers");
  if (x_stride < k || x_stride % 4 != 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "Q4Linear: x_stride=%d must be a multiple of 4 and at least k=%d", x_stride, k));
  if (Misaligned(x)) return absl::InvalidArgumentError("Q4Linear: x must be 16-byte aligned");

  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    return absl::InternalError("Q4Linear: cannot read the device's SM count");
  const int64_t target_blocks = kBlocksPerSm * sms;
  // Four columns a warp reuse each staged x value most, but where their grid fills its waves of one
  // block per SM to less than 80%, two do better (the drafter's shapes at 1, 8 and 16 rows on the
  // H200; docs/perf.md). One column a warp never did.
  const auto blocks = [&](int columns) {
    int64_t total = 0;
    for (int i = 0; i < count; ++i) total += BlocksOf(outs[i].w->n, columns);
    return total;
  };
  const int64_t blocks4 = blocks(4);
  const int64_t waves4 = (blocks4 + sms - 1) / sms;
  int columns = 5 * blocks4 >= 4 * waves4 * sms ? 4 : 2;
  if (ctx.q4_columns != 0) {
    if (ctx.q4_columns != 1 && ctx.q4_columns != 2 && ctx.q4_columns != 4)
      return absl::InvalidArgumentError(
          absl::StrFormat("Q4Linear: q4_columns = %d; 0, 1, 2 or 4", ctx.q4_columns));
    columns = ctx.q4_columns;
  }
  const int r = rows >= 8 ? 8 : (rows >= 4 ? 4 : (rows >= 2 ? 2 : 1));
  const int64_t blocks_x = blocks(columns);
  const int64_t row_tiles = (rows + r - 1) / r;
  const int64_t blocks_y = std::clamp<int64_t>(target_blocks / blocks_x, 1, row_tiles);

  qk::Params p;
  p.x = x;
  p.x_stride = x_stride;
  p.rows = static_cast<int>(rows);
  p.k = static_cast<int>(k);
  p.parts = count;
  int first_block = 0;
  for (int i = 0; i < count; ++i) {
    const Q4DeviceWeight& w = *outs[i].w;
    qk::Part& part = p.part[i];
    part.codes = reinterpret_cast<const uint4*>(w.codes);
    part.scale_offset = w.scale_offset;
    part.y = outs[i].y;
    part.y_stride = outs[i].y_stride;
    part.n = static_cast<int>(w.n);
    part.first_block = first_block;
    first_block += static_cast<int>(BlocksOf(w.n, columns));
  }
  const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(blocks_y));
  cudaError_t e = cudaSuccess;
  switch (r) {
    case 8:
      e = LaunchColumns<8>(columns, p, grid, device, ctx.stream);
      break;
    case 4:
      e = LaunchColumns<4>(columns, p, grid, device, ctx.stream);
      break;
    case 2:
      e = LaunchColumns<2>(columns, p, grid, device, ctx.stream);
      break;
    default:
      e = LaunchColumns<1>(columns, p, grid, device, ctx.stream);
      break;
  }
  if (e != cudaSuccess)
    return absl::InternalError(
        absl::StrFormat("Q4Linear: launch failed: %s", cudaGetErrorString(e)));
  return absl::OkStatus();
}

absl::Status Q4Linear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                      const Q4DeviceWeight& w, float* y, int64_t y_stride) {
  const Q4LinearOutput out{&w, y, y_stride};
  return Q4Linears(ctx, x, x_stride, rows, &out, 1);
}

}  // namespace twinspan::cuda
