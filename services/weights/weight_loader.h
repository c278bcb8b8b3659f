// Loads a target's tensors from a checkpoint into the CPU ops' weight types, checking each shape.
// Shared by every family (and usable by the drafter for the target's embedding and head).
#ifndef TWINSPAN_SERVICES_WEIGHTS_WEIGHT_LOADER_H_
#define TWINSPAN_SERVICES_WEIGHTS_WEIGHT_LOADER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/safetensors/checkpoint.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/linear.h"

namespace twinspan::target {

// "model.language_model." when the checkpoint keeps the text model there (Qwen3.5 wrappers and
// their EXL3 conversions), else "model.".
std::string TextModelPrefix(const Checkpoint& checkpoint);

// The F32/F16/BF16 tensor `name` as floats. NotFound naming the tensor; InvalidArgument naming it
// and both shapes when its element count is not `expected_numel`.
absl::StatusOr<std::vector<float>> LoadFloats(const Checkpoint& checkpoint, const std::string& name,
                                              int64_t expected_numel);

// The linear `prefix` ("...q_proj") with HF weight shape [out_features, in_features]: dense from
// `prefix.weight`, or EXL3 from `prefix.trellis` & co. (the checkpoint must then outlive the
// weight), named `prefix` (LinearWeight::source). InvalidArgument naming the tensor for a wrong
// shape or a bad EXL3 linear; NotFound when neither exists.
absl::StatusOr<cpu::LinearWeight> LoadLinear(const Checkpoint& checkpoint,
                                             const std::string& prefix, int64_t out_features,
                                             int64_t in_features);

// The unquantized embedding `name` [rows, dim] in its stored dtype (F32/F16/BF16).
absl::StatusOr<cpu::EmbeddingTable> LoadEmbedding(const Checkpoint& checkpoint,
                                                  const std::string& name, int64_t rows,
                                                  int64_t dim);

// InvalidArgument "<family> layer <layer>: <name> is [o, i], expected [out, in]" unless `w` is a
// loaded linear of that shape.
absl::Status CheckLinearShape(const cpu::LinearWeight& w, int64_t out, int64_t in,
                              std::string_view family, int64_t layer, std::string_view name);

// InvalidArgument naming family, layer and weight unless `v` holds `size` values.
absl::Status CheckVectorSize(const std::vector<float>& v, int64_t size, std::string_view family,
                             int64_t layer, std::string_view name);

// `weights` + 1, for the zero-centred (1 + w) norms of Qwen3.5, computed once at load.
std::vector<float> OnePlus(std::vector<float> weights);

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_WEIGHTS_WEIGHT_LOADER_H_
