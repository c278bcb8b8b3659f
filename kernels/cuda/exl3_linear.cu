// Host side of the EXL3 linear: validation, workspace layout, the input rotation and the 64-row
// launches. Device code is in exl3_linear_kernel.cuh.
#include <algorithm>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cuda/exl3_linear.cuh"
#include "kernels/cuda/exl3_linear_kernel.cuh"
#include "kernels/cuda/exl3_linear_launch.cuh"

namespace twinspan::cuda {
namespace {

namespace ek = exl3_kernel;

constexpr int64_t kMaxRowsPerLaunch = 64;
constexpr size_t kAlign = 256;

size_t AlignUp(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

struct WorkspaceLayout {
  size_t counters, xh, z, total;
};

WorkspaceLayout Layout(const Exl3DeviceWeight& w, int64_t rows) {
  const int64_t m = std::min(rows, kMaxRowsPerLaunch);
  WorkspaceLayout l;
  l.counters = 0;
  l.xh = AlignUp(static_cast<size_t>(w.n / 128) * sizeof(int));
  l.z = l.xh + AlignUp(static_cast<size_t>(m * w.k) * sizeof(__half));
  l.total = l.z + static_cast<size_t>(w.k_splits) * m * w.n * sizeof(float);
  return l;
}

absl::Status Validate(const Exl3DeviceWeight& w) {
  if (!w.trellis || !w.suh || !w.svh)
    return absl::InvalidArgumentError("Exl3Linear: trellis, suh and svh must be device pointers");
  if (w.k <= 0 || w.k % 128 != 0 || w.n <= 0 || w.n % 128 != 0)
    return absl::InvalidArgumentError(
        absl::StrFormat("Exl3Linear: k=%d and n=%d must be positive multiples of 128", w.k, w.n));
  if (w.bits < 1 || w.bits > 8)
    return absl::InvalidArgumentError(absl::StrFormat("Exl3Linear: bits=%d not in 1..8", w.bits));
  if (w.tile_row_stride < w.n / 16 * 16 * w.bits)
    return absl::InvalidArgumentError(
        absl::StrFormat("Exl3Linear: tile_row_stride=%d is below the view's row of tiles (%d)",
                        w.tile_row_stride, w.n / 16 * 16 * w.bits));
  const int64_t kt = w.k / 16;
  if (w.k_splits < 1 || w.warps < 1 || w.warps > 8 || kt % (w.k_splits * w.warps) != 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "Exl3Linear: plan (k_splits=%d, warps=%d) must divide the %d k-tiles, warps 1..8",
        w.k_splits, w.warps, kt));
  switch (w.codebook) {
    case Exl3Codebook::k3inst:
    case Exl3Codebook::kMcg:
    case Exl3Codebook::kMul1:
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("Exl3Linear: unknown codebook");
}

absl::Status CudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrFormat("Exl3Linear: %s failed: %s", what, cudaGetErrorString(e)));
}

}  // namespace

namespace exl3_kernel {

// xh[r][c] = fp16(H128(x[r][c] * suh[c]) / sqrt(128)) in fp32 with the CPU op's butterfly order,
// so xh is bit-identical to the CPU op's; one warp per (row, 128-chunk).
__global__ void RotateInputKernel(const float* __restrict__ x, int64_t ldx,
                                  const __half* __restrict__ suh, __half* __restrict__ xh, int m,
                                  int k) {
  WaitForPriorGrids();  // x comes from the previous grid; then the linear may start its prologue.
  AllowNextGrid();
  const int lane = threadIdx.x & 31;
  const int64_t item = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int chunks = k / 128;
  if (item >= static_cast<int64_t>(m) * chunks) return;
  const int row = static_cast<int>(item / chunks),
            c = static_cast<int>(item % chunks) * 128 + lane * 4;
  const float4 xv = *reinterpret_cast<const float4*>(x + row * ldx + c);
  const float xs[4] = {xv.x, xv.y, xv.z, xv.w};
  float v[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    v[i] = __fmul_rn(xs[i], __half2float(suh[c + i]));  // fp32, as the CPU op.
  Hadamard128(v);
  __half2* dst = reinterpret_cast<__half2*>(xh + static_cast<int64_t>(row) * k + c);
  dst[0] = __floats2half2_rn(__fmul_rn(v[0], kHadScale), __fmul_rn(v[1], kHadScale));
  dst[1] = __floats2half2_rn(__fmul_rn(v[2], kHadScale), __fmul_rn(v[3], kHadScale));
}

}  // namespace exl3_kernel

size_t Exl3LinearWorkspaceBytes(const Exl3DeviceWeight& w, int64_t rows) {
  return Layout(w, std::max<int64_t>(rows, 1)).total;
}

absl::Status Exl3Linear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                        const Exl3DeviceWeight& w, float* y, int64_t y_stride) {
  ABSL_RETURN_IF_ERROR(Validate(w));
  if (rows < 0) return absl::InvalidArgumentError("Exl3Linear: rows < 0");
  if (rows == 0) return absl::OkStatus();
  if (!x || !y) return absl::InvalidArgumentError("Exl3Linear: x and y must be device pointers");
  if (x_stride < w.k || y_stride < w.n || x_stride % 4 != 0 || y_stride % 4 != 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "Exl3Linear: x_stride=%d / y_stride=%d must be multiples of 4 and at least k=%d / n=%d",
        x_stride, y_stride, w.k, w.n));
  // float4 loads of x, float4 stores of y and 16-byte cp.async of the trellis.
  auto misaligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 != 0; };
  if (misaligned(x) || misaligned(y) || misaligned(w.trellis))
    return absl::InvalidArgumentError(
        "Exl3Linear: x, y and the trellis must be 16-byte aligned device pointers");
  const WorkspaceLayout layout = Layout(w, rows);
  if (!ctx.workspace || ctx.workspace_bytes < layout.total)
    return absl::ResourceExhaustedError(
        absl::StrFormat("Exl3Linear: workspace of %d bytes, needs %d for k=%d n=%d rows=%d",
                        ctx.workspace_bytes, layout.total, w.k, w.n, rows));
  char* ws = static_cast<char*>(ctx.workspace);

  for (int64_t r0 = 0; r0 < rows; r0 += kMaxRowsPerLaunch) {
    const int m = static_cast<int>(std::min(rows - r0, kMaxRowsPerLaunch));
    ek::LinearParams p{};
    p.trellis = w.trellis;
    p.tile_row_stride = w.tile_row_stride;
    p.xh = reinterpret_cast<const __half*>(ws + layout.xh);
    p.svh = w.svh;
    p.bias = w.bias;
    p.z = reinterpret_cast<float*>(ws + layout.z);
    p.counters = reinterpret_cast<int*>(ws + layout.counters);
    p.y_f32 = y + r0 * y_stride;
    p.y_f16 = nullptr;
    p.ldy = y_stride;
    p.m = m;
    p.k = static_cast<int>(w.k);
    p.n = static_cast<int>(w.n);
    p.sk = w.k_splits;
    p.wk = w.warps;

    const int64_t warps = static_cast<int64_t>(m) * (w.k / 128);
    ek::RotateInputKernel<<<static_cast<unsigned>((warps + 7) / 8), 256, 0, ctx.stream>>>(
        x + r0 * x_stride, x_stride, w.suh, reinterpret_cast<__half*>(ws + layout.xh), m,
        static_cast<int>(w.k));
    ABSL_RETURN_IF_ERROR(CudaStatus(cudaGetLastError(), "input rotation launch"));

    const int mt = m <= 16 ? 1 : (m <= 32 ? 2 : 4);
    cudaError_t e = cudaSuccess;
    switch (w.codebook) {
      case Exl3Codebook::k3inst:
        e = ek::LaunchLinear<ek::Cb::k3inst>(w.bits, mt, p, ctx.stream);
        break;
      case Exl3Codebook::kMcg:
        e = ek::LaunchLinear<ek::Cb::kMcg>(w.bits, mt, p, ctx.stream);
        break;
      case Exl3Codebook::kMul1:
        e = ek::LaunchLinear<ek::Cb::kMul1>(w.bits, mt, p, ctx.stream);
        break;
    }
    ABSL_RETURN_IF_ERROR(CudaStatus(e, "linear kernel launch"));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cuda
