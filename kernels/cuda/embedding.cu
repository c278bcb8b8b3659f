// Host side of the embedding lookup: validation and launches of at most kMaxHostIds rows.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/embedding_kernel.cuh"

namespace twinspan::cuda {
namespace {

namespace ek = embedding_kernel;

absl::Status Validate(const EmbeddingView& table, int64_t rows, const void* ids, const float* out) {
  if (table.data == nullptr || table.rows <= 0 || table.dim <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Embedding: empty table (rows %d, dim %d, data %p)", table.rows, table.dim, table.data));
  }
  if (rows < 0) return absl::InvalidArgumentError(absl::StrFormat("Embedding: rows %d", rows));
  if (rows > 0 && (ids == nullptr || out == nullptr)) {
    return absl::InvalidArgumentError("Embedding: ids and out must not be null");
  }
  return absl::OkStatus();
}

ek::Params BaseParams(const EmbeddingView& table) {
  ek::Params p;
  p.table = table.data;
  p.dtype = table.dtype;
  p.table_rows = table.rows;
  p.dim = table.dim;
  return p;
}

}  // namespace

absl::Status Embedding(const Context& ctx, const EmbeddingView& table, const int32_t* ids,
                       int64_t rows, float* out) {
  ABSL_RETURN_IF_ERROR(Validate(table, rows, ids, out));
  for (int64_t r = 0; r < rows; ++r) {
    if (ids[r] < 0 || ids[r] >= table.rows) {
      return absl::InvalidArgumentError(
          absl::StrFormat("Embedding: token id %d at row %d is outside the vocabulary [0, %d)",
                          ids[r], r, table.rows));
    }
  }
  ek::Params p = BaseParams(table);
  for (int64_t r0 = 0; r0 < rows; r0 += ek::kMaxHostIds) {
    const int64_t n = std::min<int64_t>(ek::kMaxHostIds, rows - r0);
    std::copy(ids + r0, ids + r0 + n, p.host_ids.v);
    p.out = out + r0 * table.dim;
    ek::EmbeddingKernel<<<static_cast<unsigned>(n), ek::kThreads, 0, ctx.stream>>>(p);
    ABSL_RETURN_IF_ERROR(LaunchStatus("Embedding launch"));
  }
  return absl::OkStatus();
}

absl::Status EmbeddingDeviceIds(const Context& ctx, const EmbeddingView& table, const int32_t* ids,
                                int64_t rows, float* out) {
  ABSL_RETURN_IF_ERROR(Validate(table, rows, ids, out));
  if (rows == 0) return absl::OkStatus();
  if (rows > 0x7fffffff) {
    return absl::InvalidArgumentError(absl::StrFormat("EmbeddingDeviceIds: rows %d", rows));
  }
  ek::Params p = BaseParams(table);
  p.device_ids = ids;
  p.out = out;
  ek::EmbeddingKernel<<<static_cast<unsigned>(rows), ek::kThreads, 0, ctx.stream>>>(p);
  return LaunchStatus("EmbeddingDeviceIds launch");
}

}  // namespace twinspan::cuda
