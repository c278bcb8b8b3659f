#include "kernels/cpu/embedding.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "common/safetensors/half.h"

namespace twinspan::cpu {
namespace {

size_t ElementBytes(EmbeddingDtype dtype) { return dtype == EmbeddingDtype::kF32 ? 4 : 2; }

}  // namespace

absl::StatusOr<EmbeddingTable> EmbeddingTable::FromRaw(EmbeddingDtype dtype, int64_t rows,
                                                       int64_t dim, const void* raw,
                                                       size_t nbytes) {
  if (rows <= 0 || dim <= 0 ||
      nbytes != static_cast<size_t>(rows) * static_cast<size_t>(dim) * ElementBytes(dtype)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("EmbeddingTable: %d bytes for shape [%d, %d] of %d-byte elements", nbytes,
                        rows, dim, ElementBytes(dtype)));
  }
  EmbeddingTable table;
  table.dtype_ = dtype;
  table.rows_ = rows;
  table.dim_ = dim;
  const auto* begin = static_cast<const uint8_t*>(raw);
  table.bytes_ = std::make_shared<const std::vector<uint8_t>>(begin, begin + nbytes);
  return table;
}

void EmbeddingTable::Row(int64_t id, float* out) const {
  const uint8_t* row = bytes_->data() + static_cast<size_t>(id * dim_) * ElementBytes(dtype_);
  if (dtype_ == EmbeddingDtype::kF32) {
    std::memcpy(out, row, static_cast<size_t>(dim_) * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < dim_; ++i) {
    uint16_t h;
    std::memcpy(&h, row + 2 * i, 2);
    out[i] = dtype_ == EmbeddingDtype::kBF16 ? BFloat16ToFloat(h) : HalfToFloat(h);
  }
}

std::vector<float> EmbeddingTable::ToFloat() const {
  std::vector<float> out(static_cast<size_t>(rows_ * dim_));
  for (int64_t r = 0; r < rows_; ++r) Row(r, out.data() + r * dim_);
  return out;
}

absl::Status Embedding(const Context& ctx, const EmbeddingTable& table, const int32_t* ids,
                       int64_t rows, float* out) {
  if (table.rows() == 0) return absl::InvalidArgumentError("Embedding: empty table");
  for (int64_t r = 0; r < rows; ++r) {
    if (ids[r] < 0 || ids[r] >= table.rows()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("Embedding: token id %d at row %d is outside the vocabulary [0, %d)",
                          ids[r], r, table.rows()));
    }
  }
  ParallelFor(ctx.pool, rows, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) table.Row(ids[r], out + r * table.dim());
  });
  return absl::OkStatus();
}

}  // namespace twinspan::cpu
