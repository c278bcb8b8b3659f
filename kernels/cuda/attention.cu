// Host side of attention: validation (the CPU op's checks plus the kernel's limits), the choice
// between one block per (row, kv head) and one block per chunk, and launches of at most kMaxRows
// rows. Device code is in attention_kernel.cuh.
#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cpu/tree_rows.h"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/attention_kernel.cuh"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda {
namespace {

namespace ak = attention_kernel;

// Below this many (row, kv head) blocks, one block per row leaves most of an H200's 132 SMs idle.
constexpr int64_t kSplitBelowBlocks = 128;

void VisibleKeys(const cpu::AttentionShape& shape, int64_t position, int64_t num_keys, int64_t* lo,
                 int64_t* hi) {
  *lo = shape.window > 0 ? std::max<int64_t>(0, position - shape.window + 1) : 0;
  if (shape.mask == cpu::AttentionMask::kCausal) {
    *hi = position + 1;
  } else {
    *hi = shape.window > 0 ? std::min(num_keys, position + shape.window) : num_keys;
  }
}

absl::Status Validate(const cpu::AttentionShape& shape, const float* q, int64_t q_stride,
                      const int64_t* positions, int64_t rows, const KvCacheView& kv,
                      int64_t num_keys, const float* out, int64_t out_stride) {
  if (shape.num_heads <= 0 || shape.num_kv_heads <= 0 ||
      shape.num_heads % shape.num_kv_heads != 0 || shape.head_dim != kv.head_dim ||
      shape.num_kv_heads != kv.kv_heads || shape.window < 0 || rows < 0 ||
      q_stride < shape.num_heads * shape.head_dim ||
      out_stride < shape.num_heads * shape.head_dim) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Attention: heads %d, kv_heads %d, head_dim %d, window %d, strides %d/%d against a cache "
        "of %d kv heads x %d dims",
        shape.num_heads, shape.num_kv_heads, shape.head_dim, shape.window, q_stride, out_stride,
        kv.kv_heads, kv.head_dim));
  }
  const int64_t group = shape.num_heads / shape.num_kv_heads;
  if (shape.head_dim > ak::kMaxHeadDim || group > ak::kMaxGroup ||
      group * shape.head_dim > ak::kMaxGroupDims) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Attention: head_dim %d with %d query heads per kv head exceeds the CUDA kernel's limits "
        "(head_dim <= %d, <= %d heads per kv head, <= %d query values per kv head)",
        shape.head_dim, group, ak::kMaxHeadDim, ak::kMaxGroup, ak::kMaxGroupDims));
  }
  if (num_keys < 1 || num_keys > kv.capacity) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Attention: num_keys %d outside [1, %d]", num_keys, kv.capacity));
  }
  if (rows > 0 && (q == nullptr || out == nullptr || positions == nullptr || kv.k == nullptr ||
                   kv.v == nullptr)) {
    return absl::InvalidArgumentError(
        "Attention: q, positions, out and the cache must not be null");
  }
  for (int64_t r = 0; r < rows; ++r) {
    int64_t lo, hi;
    VisibleKeys(shape, positions[r], num_keys, &lo, &hi);
    if (positions[r] < 0 ||
        (shape.mask == cpu::AttentionMask::kCausal && positions[r] >= num_keys) || lo >= hi) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Attention: row %d at position %d sees no valid keys of %d", r, positions[r], num_keys));
    }
  }
  return absl::OkStatus();
}

int64_t Chunks(int64_t num_keys) { return (num_keys + ak::kChunk - 1) / ak::kChunk; }

bool SplitPays(int64_t launch_rows, int64_t kv_heads, int64_t chunks) {
  return chunks > 1 && launch_rows * kv_heads < kSplitBelowBlocks;
}

template <int kDpl, typename T, bool kTree>
absl::Status LaunchRows(const ak::Params& p, int rows, int kv_heads, bool per_chunk,
                        cudaStream_t stream) {
  if (!per_chunk) {
    LaunchPdl(&ak::FusedKernel<kDpl, T, kTree>, dim3(rows, kv_heads), ak::kThreads, 0, stream, p);
    return LaunchStatus("Attention launch");
  }
  LaunchPdl(&ak::ChunkKernel<kDpl, T, kTree>, dim3(static_cast<unsigned>(p.chunks), rows, kv_heads),
            ak::kThreads, 0, stream, p);
  ABSL_RETURN_IF_ERROR(LaunchStatus("Attention chunk launch"));
  LaunchPdl(&ak::MergeKernel, dim3(rows, p.num_heads), p.head_dim, 0, stream, p);
  return LaunchStatus("Attention merge launch");
}

template <typename T, bool kTree>
absl::Status Launch(const ak::Params& p, int rows, int kv_heads, bool per_chunk,
                    cudaStream_t stream) {
  switch ((p.head_dim + 31) / 32) {
    case 1:
      return LaunchRows<1, T, kTree>(p, rows, kv_heads, per_chunk, stream);
    case 2:
      return LaunchRows<2, T, kTree>(p, rows, kv_heads, per_chunk, stream);
    case 3:
      return LaunchRows<3, T, kTree>(p, rows, kv_heads, per_chunk, stream);
    case 4:
      return LaunchRows<4, T, kTree>(p, rows, kv_heads, per_chunk, stream);
    case 5:
      return LaunchRows<5, T, kTree>(p, rows, kv_heads, per_chunk, stream);
    case 6:
      return LaunchRows<6, T, kTree>(p, rows, kv_heads, per_chunk, stream);
    case 7:
      return LaunchRows<7, T, kTree>(p, rows, kv_heads, per_chunk, stream);
    case 8:
      return LaunchRows<8, T, kTree>(p, rows, kv_heads, per_chunk, stream);
  }
  return absl::InternalError("Attention: head_dim passed validation but has no kernel");
}

// The launch parameters every strategy shares.
ak::Params BaseParams(const Context& ctx, const cpu::AttentionShape& shape, int64_t q_stride,
                      const KvCacheView& kv, int64_t num_keys, int64_t out_stride) {
  ak::Params p;
  p.q_stride = q_stride;
  p.out_stride = out_stride;
  p.k = kv.k;
  p.v = kv.v;
  p.row_size = kv.kv_heads * kv.head_dim;
  p.num_heads = static_cast<int>(shape.num_heads);
  p.head_dim = static_cast<int>(shape.head_dim);
  p.group = static_cast<int>(shape.num_heads / shape.num_kv_heads);
  p.scale = shape.scale;
  p.causal = shape.mask == cpu::AttentionMask::kCausal;
  p.window = shape.window;
  p.num_keys = num_keys;
  p.partials = static_cast<float*>(ctx.workspace);
  p.chunks = Chunks(num_keys);
  return p;
}

}  // namespace

size_t AttentionWorkspaceBytes(const cpu::AttentionShape& shape, int64_t rows, int64_t num_keys,
                               AttentionStrategy strategy) {
  const int64_t launch_rows = std::clamp<int64_t>(rows, 0, ak::kMaxRows);
  if (strategy == AttentionStrategy::kOneBlockPerRow ||
      (strategy == AttentionStrategy::kAuto &&
       !SplitPays(launch_rows, shape.num_kv_heads, Chunks(num_keys)))) {
    return 0;
  }
  return static_cast<size_t>(launch_rows * shape.num_heads * Chunks(num_keys) *
                             (shape.head_dim + 2)) *
         sizeof(float);
}

absl::Status Attention(const Context& ctx, const cpu::AttentionShape& shape, const float* q,
                       int64_t q_stride, const int64_t* positions, int64_t rows,
                       const KvCacheView& kv, int64_t num_keys, float* out, int64_t out_stride,
                       AttentionStrategy strategy) {
  ABSL_RETURN_IF_ERROR(
      Validate(shape, q, q_stride, positions, rows, kv, num_keys, out, out_stride));
  if (rows == 0) return absl::OkStatus();
  const size_t needed =
      AttentionWorkspaceBytes(shape, rows, num_keys, AttentionStrategy::kBlockPerChunk);
  const bool fits = ctx.workspace != nullptr && ctx.workspace_bytes >= needed;
  if (strategy == AttentionStrategy::kBlockPerChunk && !fits) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "Attention: workspace of %d bytes, one block per chunk needs %d for %d rows and %d keys",
        ctx.workspace_bytes, needed, rows, num_keys));
  }
  ak::Params p = BaseParams(ctx, shape, q_stride, kv, num_keys, out_stride);
  for (int64_t r0 = 0; r0 < rows; r0 += ak::kMaxRows) {
    const int n = static_cast<int>(std::min<int64_t>(ak::kMaxRows, rows - r0));
    std::copy(positions + r0, positions + r0 + n, p.positions.v);
    p.q = q + r0 * q_stride;
    p.out = out + r0 * out_stride;
    const bool per_chunk = strategy == AttentionStrategy::kBlockPerChunk ||
                           (strategy == AttentionStrategy::kAuto && fits &&
                            SplitPays(n, shape.num_kv_heads, p.chunks));
    const int kv_heads = static_cast<int>(shape.num_kv_heads);
    const absl::Status launched =
        kv.dtype == cpu::KvDtype::kBF16
            ? Launch<uint16_t, /*kTree=*/false>(p, n, kv_heads, per_chunk, ctx.stream)
            : Launch<float, /*kTree=*/false>(p, n, kv_heads, per_chunk, ctx.stream);
    ABSL_RETURN_IF_ERROR(launched);
  }
  return absl::OkStatus();
}

size_t TreeAttentionWorkspaceBytes(const cpu::AttentionShape& shape,
                                   absl::Span<const int32_t> parents, int64_t first_slot) {
  const int64_t rows = static_cast<int64_t>(parents.size());
  if (!cpu::CheckTreeParents("TreeAttention", parents.data(), rows).ok()) return 0;
  const std::vector<int64_t> depth = cpu::TreeDepths(parents.data(), rows);
  const int64_t keys = first_slot + *std::max_element(depth.begin(), depth.end()) + 1;
  return AttentionWorkspaceBytes(shape, rows, keys);
}

absl::Status TreeAttention(const Context& ctx, const cpu::AttentionShape& shape, const float* q,
                           int64_t q_stride, const int32_t* parents, int64_t rows,
                           int64_t first_slot, const KvCacheView& kv, float* out,
                           int64_t out_stride) {
  ABSL_RETURN_IF_ERROR(cpu::CheckTreeParents("TreeAttention", parents, rows));
  if (shape.mask != cpu::AttentionMask::kCausal || first_slot < 0 ||
      first_slot + rows > kv.capacity) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TreeAttention: a causal mask and rows in slots [first_slot, first_slot + rows) inside "
        "the cache, got first_slot %d, %d rows, capacity %d",
        first_slot, rows, kv.capacity));
  }
  const std::vector<int64_t> depth = cpu::TreeDepths(parents, rows);
  const int64_t max_depth = *std::max_element(depth.begin(), depth.end());
  if (rows > ak::kMaxRows || max_depth >= ak::kMaxTreeDepth) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TreeAttention: a tree of %d rows, %d deep, exceeds the CUDA op (%d rows, depth below %d)",
        rows, max_depth, ak::kMaxRows, ak::kMaxTreeDepth));
  }
  std::vector<int64_t> positions(rows);
  for (int64_t r = 0; r < rows; ++r) positions[r] = first_slot + depth[r];
  const int64_t num_keys = first_slot + max_depth + 1;
  ABSL_RETURN_IF_ERROR(
      Validate(shape, q, q_stride, positions.data(), rows, kv, num_keys, out, out_stride));
  ak::Params p = BaseParams(ctx, shape, q_stride, kv, num_keys, out_stride);
  const size_t needed =
      AttentionWorkspaceBytes(shape, rows, num_keys, AttentionStrategy::kBlockPerChunk);
  const bool fits = ctx.workspace != nullptr && ctx.workspace_bytes >= needed;
  std::copy(positions.begin(), positions.end(), p.positions.v);
  for (int64_t r = 0; r < rows; ++r) p.parents.v[r] = static_cast<int16_t>(parents[r]);
  p.tree_base = first_slot;
  p.q = q;
  p.out = out;
  const int n = static_cast<int>(rows);
  const bool per_chunk = fits && SplitPays(n, shape.num_kv_heads, p.chunks);
  const int kv_heads = static_cast<int>(shape.num_kv_heads);
  return kv.dtype == cpu::KvDtype::kBF16
             ? Launch<uint16_t, true>(p, n, kv_heads, per_chunk, ctx.stream)
             : Launch<float, true>(p, n, kv_heads, per_chunk, ctx.stream);
}

}  // namespace twinspan::cuda
