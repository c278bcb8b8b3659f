#include "tools/exl3/dense_export.h"

#include <vector>

#include "common/exl3/dequant.h"
#include "common/exl3/weight.h"
#include "common/safetensors/writer.h"
#include "common/status.h"

namespace twinspan::exl3 {

absl::Status ExportDense(const Checkpoint& checkpoint, std::string_view prefix,
                         const std::string& out_path) {
  ABSL_ASSIGN_OR_RETURN(Weight weight, Weight::Load(checkpoint, prefix));
  const int64_t k = weight.k(), n = weight.n();
  const std::vector<float> dense = DequantizeDense(weight);  // [k, n]
  std::vector<float> hf(dense.size());                       // [n, k]
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < n; ++j) hf[j * k + i] = dense[i * n + j];
  }
  std::vector<OwnedTensor> tensors;
  tensors.push_back(OwnedTensor::FromFloats("weight", {n, k}, hf));
  if (weight.has_bias()) {
    tensors.push_back(OwnedTensor::FromFloats(
        "bias", {n}, std::vector<float>(weight.bias().begin(), weight.bias().end())));
  }
  return WriteSafetensors(out_path, tensors);
}

}  // namespace twinspan::exl3
