// The drafter's weights in its backend's memory, uploaded once at open: a linear handle per linear,
// a buffer per norm and conv base kernel, and the selector's codebooks in their stored dtype.
#ifndef TWINSPAN_SERVICES_DRAFTER_DRAFTER_DEVICE_WEIGHTS_H_
#define TWINSPAN_SERVICES_DRAFTER_DRAFTER_DEVICE_WEIGHTS_H_

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/backend/backend.h"
#include "services/drafter/drafter_weights.h"

namespace twinspan::drafter {

using BufferPtr = std::unique_ptr<backend::Buffer>;
using LinearPtr = std::unique_ptr<backend::LinearHandle>;

struct DeviceConv {
  BufferPtr base_kernel;  // [2, Kc, H]
  LinearPtr projection;   // [2 * Kc * G, H]
};

struct DeviceLayer {
  BufferPtr input_norm, post_attention_norm, q_norm, k_norm;
  LinearPtr q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj;
  std::optional<DeviceConv> attention_conv, mlp_conv;
};

struct DeviceSelector {
  LinearPtr hidden_projection;                         // [r, H]
  BufferPtr predecessor, successor;                    // [V, r] bytes of `type`
  cpu::CodebookView predecessor_view, successor_view;  // Their data in backend memory.
};

// Immutable after upload; the handles must not outlive the backend that made them.
struct DrafterDeviceWeights {
  LinearPtr fc;
  BufferPtr hidden_norm, norm;
  std::vector<DeviceLayer> layers;
  std::optional<DeviceSelector> selector;
};

// Uploads every weight of `weights`. REQUIRES: the caller is the backend's only issuer meanwhile.
// Errors of the backend's uploads (ResourceExhausted naming the bytes, InvalidArgument).
absl::StatusOr<DrafterDeviceWeights> UploadDrafterWeights(backend::Backend& backend,
                                                          const DrafterWeights& weights);

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_DRAFTER_DRAFTER_DEVICE_WEIGHTS_H_
