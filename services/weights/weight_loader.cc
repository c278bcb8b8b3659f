#include "services/weights/weight_loader.h"

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/exl3/weight.h"
#include "common/status.h"

namespace twinspan::target {
namespace {

std::string ShapeString(const std::vector<int64_t>& shape) {
  return "[" + absl::StrJoin(shape, ", ") + "]";
}

}  // namespace

absl::Status CheckLinearShape(const cpu::LinearWeight& w, int64_t out, int64_t in,
                              std::string_view family, int64_t layer, std::string_view name) {
  if (w.empty() || w.out_features() != out || w.in_features() != in) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s layer %d: %s is [%d, %d], expected [%d, %d]", family, layer, name,
                        w.out_features(), w.in_features(), out, in));
  }
  return absl::OkStatus();
}

absl::Status CheckVectorSize(const std::vector<float>& v, int64_t size, std::string_view family,
                             int64_t layer, std::string_view name) {
  if (static_cast<int64_t>(v.size()) != size) {
    return absl::InvalidArgumentError(absl::StrFormat("%s layer %d: %s has %d values, expected %d",
                                                      family, layer, name, v.size(), size));
  }
  return absl::OkStatus();
}

std::string TextModelPrefix(const Checkpoint& checkpoint) {
  return checkpoint.Has("model.language_model.embed_tokens.weight") ? "model.language_model."
                                                                    : "model.";
}

absl::StatusOr<std::vector<float>> LoadFloats(const Checkpoint& checkpoint, const std::string& name,
                                              int64_t expected_numel) {
  ABSL_ASSIGN_OR_RETURN(const TensorView view, checkpoint.Get(name));
  if (view.numel() != expected_numel) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: tensor %s has shape %s, expected %d elements", checkpoint.path(), name,
                        ShapeString(view.shape), expected_numel));
  }
  return checkpoint.Floats(name);
}

absl::StatusOr<cpu::LinearWeight> LoadLinear(const Checkpoint& checkpoint,
                                             const std::string& prefix, int64_t out_features,
                                             int64_t in_features) {
  const std::string name = prefix + ".weight";
  if (const TensorView* view = checkpoint.Find(name)) {
    if (view->shape != std::vector<int64_t>{out_features, in_features}) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: tensor %s has shape %s, expected [%d, %d]", checkpoint.path(), name,
                          ShapeString(view->shape), out_features, in_features));
    }
    ABSL_ASSIGN_OR_RETURN(std::vector<float> values, checkpoint.Floats(name));
    ABSL_ASSIGN_OR_RETURN(const cpu::LinearWeight w,
                          cpu::LinearWeight::Dense(out_features, in_features, std::move(values)));
    return w.Named(prefix);
  }
  if (exl3::Weight::IsStored(checkpoint, prefix)) {
    ABSL_ASSIGN_OR_RETURN(exl3::Weight w, exl3::Weight::Load(checkpoint, prefix));
    if (w.n() != out_features || w.k() != in_features) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: EXL3 linear %s is [k %d, n %d], expected [k %d, n %d]",
                          checkpoint.path(), prefix, w.k(), w.n(), in_features, out_features));
    }
    return cpu::LinearWeight::Exl3(std::move(w)).Named(prefix);
  }
  return absl::NotFoundError(absl::StrFormat("%s: no tensor %s (nor an EXL3 %s.trellis)",
                                             checkpoint.path(), name, prefix));
}

absl::StatusOr<cpu::EmbeddingTable> LoadEmbedding(const Checkpoint& checkpoint,
                                                  const std::string& name, int64_t rows,
                                                  int64_t dim) {
  ABSL_ASSIGN_OR_RETURN(const TensorView view, checkpoint.Get(name));
  if (view.shape != std::vector<int64_t>{rows, dim}) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: tensor %s has shape %s, expected [%d, %d]", checkpoint.path(), name,
                        ShapeString(view.shape), rows, dim));
  }
  cpu::EmbeddingDtype dtype;
  switch (view.dtype) {
    case DType::kF32:
      dtype = cpu::EmbeddingDtype::kF32;
      break;
    case DType::kBF16:
      dtype = cpu::EmbeddingDtype::kBF16;
      break;
    case DType::kF16:
      dtype = cpu::EmbeddingDtype::kF16;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: embedding %s is %s; expected F32, F16 or BF16", checkpoint.path(),
                          name, DTypeName(view.dtype)));
  }
  return cpu::EmbeddingTable::FromRaw(dtype, rows, dim, view.data, view.nbytes);
}

std::vector<float> OnePlus(std::vector<float> weights) {
  for (float& w : weights) w = 1.0f + w;
  return weights;
}

}  // namespace twinspan::target
