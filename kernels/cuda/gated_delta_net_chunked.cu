// Host side of GatedDeltaNetChunked: validation, the workspace layout and three launches per
// segment of up to 1,024 rows. Device code: gated_delta_net_chunked_kernel.cuh.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cuda/gated_delta_net_chunked.cuh"
#include "kernels/cuda/gated_delta_net_chunked_kernel.cuh"
#include "kernels/cuda/shared_memory_limit.h"

namespace twinspan::cuda {
namespace {

namespace ck = gdn_chunked_kernel;

constexpr int64_t kSegmentRows = ck::kSegmentChunks * ck::kChunk;
constexpr size_t kAlign = 256;

size_t AlignUp(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Byte offsets of the per-segment scratch inside ctx.workspace.
struct Layout {
  size_t qn, kn, w, u, pm, decay, total;
};

Layout MakeLayout(const cpu::GatedDeltaNetDims& d, int64_t rows) {
  const int64_t chunks = (std::min(rows, kSegmentRows) + ck::kChunk - 1) / ck::kChunk;
  const size_t f = sizeof(float);
  const size_t qk = AlignUp(f * chunks * ck::kChunk * d.k_heads * d.k_dim);
  Layout l;
  l.qn = 0;
  l.kn = l.qn + qk;
  l.w = l.kn + qk;
  l.u = l.w + AlignUp(f * chunks * d.v_heads * ck::kChunk * d.k_dim);
  l.pm = l.u + AlignUp(f * chunks * d.v_heads * ck::kChunk * d.v_dim);
  l.decay = l.pm + AlignUp(f * chunks * d.v_heads * ck::kChunk * ck::kChunk);
  l.total = l.decay + AlignUp(f * chunks * d.v_heads * ck::kDecayFloats);
  return l;
}

absl::Status LaunchStatus(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrFormat("GatedDeltaNetChunked: %s failed: %s", what, cudaGetErrorString(e)));
}

}  // namespace

size_t GatedDeltaNetChunkedWorkspaceBytes(const cpu::GatedDeltaNetDims& dims, int64_t rows) {
  return rows <= 0 ? 0 : MakeLayout(dims, rows).total;
}

absl::Status GatedDeltaNetChunked(const Context& ctx, const float* qkv, const float* g,
                                  const float* beta, int64_t rows,
                                  const cpu::GatedDeltaNetDims& dims, float* state, float* out) {
  if (rows < 0 || dims.k_heads <= 0 || dims.v_heads <= 0 || dims.k_dim <= 0 || dims.v_dim <= 0 ||
      dims.v_heads % dims.k_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("GatedDeltaNetChunked: rows %d, k_heads %d, v_heads %d, k_dim %d, v_dim %d",
                        rows, dims.k_heads, dims.v_heads, dims.k_dim, dims.v_dim));
  }
  if (dims.k_dim > ck::kMaxKDim || dims.v_heads > 65535 || dims.v_dim > (1 << 24)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GatedDeltaNetChunked: k_dim %d (at most %d), v_heads %d (at most 65535) or v_dim %d too "
        "large",
        dims.k_dim, ck::kMaxKDim, dims.v_heads, dims.v_dim));
  }
  if (rows == 0) return absl::OkStatus();
  if (!qkv || !g || !beta || !state || !out) {
    return absl::InvalidArgumentError(
        "GatedDeltaNetChunked: qkv, g, beta, state and out must be device pointers");
  }
  const Layout layout = MakeLayout(dims, rows);
  if (ctx.workspace == nullptr || ctx.workspace_bytes < layout.total) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("GatedDeltaNetChunked: workspace of %d bytes, needs %d for %d rows",
                        ctx.workspace_bytes, layout.total, rows));
  }
  char* ws = static_cast<char*>(ctx.workspace);
  const int k_dim = static_cast<int>(dims.k_dim);
  const size_t prepare_smem = ck::PrepareSmemBytes(k_dim), scan_smem = ck::ScanSmemBytes(k_dim);
  // Both need more than the default 48 KB at k_dim 128 (66 KB, 74 KB).
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      AllowSharedMemory<&ck::PrepareKernel>(device, static_cast<int>(prepare_smem)) !=
          cudaSuccess ||
      AllowSharedMemory<&ck::ScanKernel>(device, static_cast<int>(scan_smem)) != cudaSuccess) {
    const cudaError_t e = cudaGetLastError();
    return absl::ResourceExhaustedError(
        absl::StrFormat("GatedDeltaNetChunked: %d / %d bytes of shared memory for k_dim %d: %s",
                        prepare_smem, scan_smem, k_dim, cudaGetErrorString(e)));
  }

  ck::Params p{};
  p.qkv_width = dims.qkv_width();
  p.k_heads = static_cast<int>(dims.k_heads);
  p.v_heads = static_cast<int>(dims.v_heads);
  p.k_dim = k_dim;
  p.v_dim = static_cast<int>(dims.v_dim);
  p.q_scale = 1.0f / std::sqrt(static_cast<float>(dims.k_dim));  // As cpu::GatedDeltaNet.
  p.qn = reinterpret_cast<float*>(ws + layout.qn);
  p.kn = reinterpret_cast<float*>(ws + layout.kn);
  p.w = reinterpret_cast<float*>(ws + layout.w);
  p.u = reinterpret_cast<float*>(ws + layout.u);
  p.pm = reinterpret_cast<float*>(ws + layout.pm);
  p.decay = reinterpret_cast<float*>(ws + layout.decay);
  p.state = state;
  for (int64_t r0 = 0; r0 < rows; r0 += kSegmentRows) {
    p.rows = std::min(kSegmentRows, rows - r0);
    p.chunks = static_cast<int>((p.rows + ck::kChunk - 1) / ck::kChunk);
    p.qkv = qkv + r0 * p.qkv_width;
    p.g = g + r0 * dims.v_heads;
    p.beta = beta + r0 * dims.v_heads;
    p.out = out + r0 * dims.v_heads * dims.v_dim;
    const int64_t items = p.rows * dims.k_heads;
    ck::NormalizeKernel<<<static_cast<unsigned>((items + ck::kWarps - 1) / ck::kWarps),
                          ck::kThreads, 0, ctx.stream>>>(p);
    ABSL_RETURN_IF_ERROR(LaunchStatus("normalize launch"));
    ck::PrepareKernel<<<dim3(p.chunks, p.v_heads), ck::kThreads, prepare_smem, ctx.stream>>>(p);
    ABSL_RETURN_IF_ERROR(LaunchStatus("prepare launch"));
    const unsigned column_blocks =
        static_cast<unsigned>((dims.v_dim + ck::kScanColumns - 1) / ck::kScanColumns);
    ck::ScanKernel<<<dim3(column_blocks, p.v_heads), ck::kThreads, scan_smem, ctx.stream>>>(p);
    ABSL_RETURN_IF_ERROR(LaunchStatus("scan launch"));
  }
  return absl::OkStatus();
}

}  // namespace twinspan::cuda
