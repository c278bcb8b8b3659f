// Token embedding lookup on the GPU from a table kept in its checkpoint dtype: the twin of
// kernels/cpu/embedding.h. Rows are copied and widened exactly (bf16 and f16 have exact fp32
// values), so the result equals the CPU op's bit for bit.
#ifndef TWINSPAN_KERNELS_CUDA_EMBEDDING_CUH_
#define TWINSPAN_KERNELS_CUDA_EMBEDDING_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cuda/context.cuh"

namespace twinspan::cuda {

// A device-resident table (see DeviceEmbeddingTable); non-owning.
struct EmbeddingView {
  const void* data = nullptr;  // [rows, dim] elements of dtype, row-major.
  cpu::EmbeddingDtype dtype = cpu::EmbeddingDtype::kF32;
  int64_t rows = 0;
  int64_t dim = 0;
};

// out[r] = table row ids[r] for r < rows, packed rows of table.dim floats in device memory; `ids`
// is host memory. InvalidArgument naming the row and id for an id outside [0, table.rows), and
// naming the argument for an empty table, rows < 0 or a null pointer. Asynchronous on ctx.stream.
absl::Status Embedding(const Context& ctx, const EmbeddingView& table, const int32_t* ids,
                       int64_t rows, float* out);

// The same with `ids` in device memory (a sampled token fed back without a host round trip). The
// host cannot see those ids, so a row whose id is outside the table is written as NaN.
absl::Status EmbeddingDeviceIds(const Context& ctx, const EmbeddingView& table, const int32_t* ids,
                                int64_t rows, float* out);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_EMBEDDING_CUH_
