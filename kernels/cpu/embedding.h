// Token embedding lookup from an unquantized table kept in its checkpoint dtype (bf16 halves the
// memory of a 248,320 x 5,120 table against fp32).
#ifndef TWINSPAN_KERNELS_CPU_EMBEDDING_H_
#define TWINSPAN_KERNELS_CPU_EMBEDDING_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

enum class EmbeddingDtype { kF32, kBF16, kF16 };

// Immutable after construction; any number of threads may read it. Copies share the data.
class EmbeddingTable {
 public:
  EmbeddingTable() = default;

  // `raw` holds rows x dim elements of `dtype`, little-endian row-major (2 or 4 bytes each).
  // InvalidArgument when the byte count disagrees with the shape or a dimension is not positive.
  static absl::StatusOr<EmbeddingTable> FromRaw(EmbeddingDtype dtype, int64_t rows, int64_t dim,
                                                const void* raw, size_t nbytes);

  int64_t rows() const { return rows_; }
  int64_t dim() const { return dim_; }
  EmbeddingDtype dtype() const { return dtype_; }

  // Writes row `id` as dim floats (exact conversion). REQUIRES: 0 <= id < rows().
  void Row(int64_t id, float* out) const;

  // The whole table as fp32 [rows, dim] (for a tied lm_head).
  std::vector<float> ToFloat() const;

 private:
  EmbeddingDtype dtype_ = EmbeddingDtype::kF32;
  int64_t rows_ = 0;
  int64_t dim_ = 0;
  std::shared_ptr<const std::vector<uint8_t>> bytes_;
};

// out[r] = table row ids[r], rows of table.dim() floats. InvalidArgument naming the row and id
// when an id is outside [0, table.rows()).
absl::Status Embedding(const Context& ctx, const EmbeddingTable& table, const int32_t* ids,
                       int64_t rows, float* out);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_EMBEDDING_H_
