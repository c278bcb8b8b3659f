// The SwiGLU MLP sublayer shared by the families: down(silu(gate(x)) * up(x)).
#ifndef TWINSPAN_SERVICES_TARGET_MLP_BLOCK_H_
#define TWINSPAN_SERVICES_TARGET_MLP_BLOCK_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/backend/backend.h"
#include "kernels/cpu/linear.h"

namespace twinspan::target {

// As loaded (host memory).
struct MlpBlockWeights {
  cpu::LinearWeight gate_proj;  // [intermediate, hidden]
  cpu::LinearWeight up_proj;    // [intermediate, hidden]
  cpu::LinearWeight down_proj;  // [hidden, intermediate]
};

// The same weights in a backend's memory.
struct MlpBlockHandles {
  std::unique_ptr<backend::LinearHandle> gate_proj, up_proj, down_proj;
};

// Backend errors (ResourceExhausted).
absl::StatusOr<MlpBlockHandles> UploadMlpBlock(backend::Backend& backend,
                                               const MlpBlockWeights& weights);

// out[rows, hidden] = MLP of the normed input x[rows, hidden], both backend memory. Op errors.
absl::Status MlpBlockForward(backend::Backend& backend, const MlpBlockHandles& weights,
                             const float* x, int64_t rows, float* out);

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_MLP_BLOCK_H_
