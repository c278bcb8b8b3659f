#include "tools/exl3/dense_export.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/exl3/dequant.h"
#include "common/exl3/weight.h"
#include "common/files/model_files.h"
#include "common/files/staged_dir.h"
#include "common/safetensors/half.h"
#include "common/safetensors/writer.h"
#include "common/status.h"
#include "tools/exl3/inspect.h"

namespace twinspan::exl3 {
namespace {

// `values` as an F32 or BF16 tensor.
OwnedTensor Typed(std::string name, std::vector<int64_t> shape, const std::vector<float>& values,
                  DType dtype) {
  if (dtype == DType::kF32)
    return OwnedTensor::FromFloats(std::move(name), std::move(shape), values);
  std::vector<uint16_t> bf16(values.size());
  for (size_t i = 0; i < values.size(); ++i) bf16[i] = FloatToBFloat16(values[i]);
  return OwnedTensor::FromRaw(std::move(name), DType::kBF16, std::move(shape), bf16);
}

// W [k, n] row-major to HF's [n, k].
std::vector<float> Transposed(const std::vector<float>& w, int64_t k, int64_t n) {
  std::vector<float> hf(w.size());
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < n; ++j) hf[j * k + i] = w[i * n + j];
  }
  return hf;
}

void DropQuantizationConfig(nlohmann::ordered_json& config) {
  config.erase("quantization_config");
  if (config.contains("text_config") && config["text_config"].is_object()) {
    config["text_config"].erase("quantization_config");
  }
}

}  // namespace

absl::Status ExportDense(const Checkpoint& checkpoint, std::string_view prefix,
                         const std::string& out_path) {
  ABSL_ASSIGN_OR_RETURN(Weight weight, Weight::Load(checkpoint, prefix));
  const int64_t k = weight.k(), n = weight.n();
  std::vector<OwnedTensor> tensors;
  tensors.push_back(
      OwnedTensor::FromFloats("weight", {n, k}, Transposed(DequantizeDense(weight), k, n)));
  if (weight.has_bias()) {
    tensors.push_back(OwnedTensor::FromFloats(
        "bias", {n}, std::vector<float>(weight.bias().begin(), weight.bias().end())));
  }
  return WriteSafetensors(out_path, tensors);
}

absl::Status ExportDenseModel(const std::string& in_dir, const std::string& out_dir, DType dtype) {
  if (dtype != DType::kF32 && dtype != DType::kBF16) {
    return absl::InvalidArgumentError(
        absl::StrFormat("dequant-model writes F32 or BF16, not %s", DTypeName(dtype)));
  }
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<files::StagedDir> staged,
                        files::StagedDir::Create(out_dir));
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, Checkpoint::Open(in_dir));
  ABSL_ASSIGN_OR_RETURN(const CheckpointReport report, InspectCheckpoint(*checkpoint));
  std::vector<OwnedTensor> tensors;
  for (const LinearInfo& linear : report.linears) {
    ABSL_ASSIGN_OR_RETURN(const Weight weight, Weight::Load(*checkpoint, linear.prefix));
    const int64_t k = weight.k(), n = weight.n();
    tensors.push_back(
        Typed(linear.prefix + ".weight", {n, k}, Transposed(DequantizeDense(weight), k, n), dtype));
    if (weight.has_bias()) {
      tensors.push_back(Typed(linear.prefix + ".bias", {n},
                              std::vector<float>(weight.bias().begin(), weight.bias().end()),
                              dtype));
    }
  }
  for (const PlainInfo& plain : report.plain) {
    const TensorView* view = checkpoint->Find(plain.name);
    OwnedTensor t{view->name, view->dtype, view->shape, {}};
    t.bytes.assign(view->data, view->data + view->nbytes);
    tensors.push_back(std::move(t));
  }
  std::sort(tensors.begin(), tensors.end(),
            [](const OwnedTensor& a, const OwnedTensor& b) { return a.name < b.name; });
  const std::filesystem::path out = staged->path();
  ABSL_RETURN_IF_ERROR(
      WriteSafetensors((out / "model.safetensors").string(), tensors, {{"format", "pt"}}));
  ABSL_ASSIGN_OR_RETURN(nlohmann::ordered_json config, files::ReadConfigJson(in_dir));
  DropQuantizationConfig(config);
  ABSL_RETURN_IF_ERROR(files::WriteJson((out / "config.json").string(), config));
  ABSL_RETURN_IF_ERROR(files::CopyModelFiles(in_dir, out.string()));
  return staged->Commit();
}

}  // namespace twinspan::exl3
