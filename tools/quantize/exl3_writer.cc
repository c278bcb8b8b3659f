#include "tools/quantize/exl3_writer.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "common/exl3/format.h"
#include "common/files/model_files.h"
#include "common/safetensors/half.h"
#include "common/status.h"

namespace twinspan::quantize {
namespace {

namespace fs = std::filesystem;

OwnedTensor Copy(const TensorView& view) {
  OwnedTensor t{view.name, view.dtype, view.shape, {}};
  t.bytes.assign(view.data, view.data + view.nbytes);
  return t;
}

absl::StatusOr<OwnedTensor> ToF16(const TensorView& view) {
  ABSL_ASSIGN_OR_RETURN(const std::vector<float> values, ToFloat(view));
  std::vector<uint16_t> half(values.size());
  for (size_t i = 0; i < values.size(); ++i) half[i] = FloatToHalf(values[i]);
  return OwnedTensor::FromRaw(view.name, DType::kF16, view.shape, half);
}

std::string TorchDtype(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "torch.float32";
    case DType::kF16:
      return "torch.float16";
    case DType::kBF16:
      return "torch.bfloat16";
    case DType::kI64:
      return "torch.int64";
    case DType::kI32:
      return "torch.int32";
    case DType::kI16:
      return "torch.int16";
    case DType::kI8:
      return "torch.int8";
    case DType::kU8:
      return "torch.uint8";
    case DType::kBool:
      return "torch.bool";
  }
  return "?";
}

std::string ModuleOf(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

}  // namespace

absl::StatusOr<std::vector<OwnedTensor>> OutputTensors(const Exl3Output& out) {
  const Checkpoint& src = *out.source;
  const ModelPlan& plan = *out.plan;
  std::vector<OwnedTensor> tensors;
  // Source tensors that quantized linears replace: their weights (unless a tied head's embedding)
  // and biases.
  std::set<std::string> replaced;
  for (const PlannedLinear& l : plan.linears) {
    if (l.source == l.prefix + ".weight") replaced.insert(l.source);
    if (l.has_bias) replaced.insert(l.prefix + ".bias");
    const std::vector<OwnedTensor> stored =
        exl3::quantize::StoredTensors(l.prefix, out.quantized->at(l.prefix));
    tensors.insert(tensors.end(), stored.begin(), stored.end());
  }
  for (const std::string& name : src.Names()) {
    if (replaced.count(name) > 0) continue;
    const TensorView& view = *src.Find(name);
    if (plan.to_f16.count(name) > 0) {
      ABSL_ASSIGN_OR_RETURN(OwnedTensor t, ToF16(view));
      tensors.push_back(std::move(t));
    } else {
      tensors.push_back(Copy(view));
    }
  }
  if (plan.tied_head && plan.head_bits == 16) {  // Un-tied: the head keeps its own copy.
    OwnedTensor head = Copy(*src.Find(plan.text_prefix + "embed_tokens.weight"));
    head.name = "lm_head.weight";
    tensors.push_back(std::move(head));
  }
  std::sort(tensors.begin(), tensors.end(),
            [](const OwnedTensor& a, const OwnedTensor& b) { return a.name < b.name; });
  return tensors;
}

nlohmann::ordered_json TensorStorage(const std::vector<OwnedTensor>& tensors) {
  nlohmann::ordered_json storage = nlohmann::ordered_json::object();
  for (const OwnedTensor& t : tensors) {
    const bool exl3_part =
        absl::EndsWith(t.name, exl3::kTrellisSuffix) || absl::EndsWith(t.name, exl3::kSuhSuffix) ||
        absl::EndsWith(t.name, exl3::kSvhSuffix) || absl::EndsWith(t.name, exl3::kMcgSuffix) ||
        absl::EndsWith(t.name, exl3::kMul1Suffix);
    nlohmann::ordered_json& module = storage[ModuleOf(t.name)];
    module["stored_tensors"][t.name] = {
        {"shape", t.shape}, {"n_bytes", t.bytes.size()}, {"dtype", TorchDtype(t.dtype)}};
    if (!exl3_part) continue;
    module["quant_format"] = "exl3";
    if (absl::EndsWith(t.name, exl3::kTrellisSuffix)) module["bits_per_weight"] = t.shape[2] / 16;
    if (absl::EndsWith(t.name, exl3::kMul1Suffix))
      module["mul1_multiplier"] = exl3::kMul1Multiplier;
    if (absl::EndsWith(t.name, exl3::kMcgSuffix)) module["mcg_multiplier"] = exl3::kMcgMultiplier;
  }
  return storage;
}

absl::Status WriteExl3Checkpoint(const Exl3Output& out) {
  ABSL_ASSIGN_OR_RETURN(const std::vector<OwnedTensor> tensors, OutputTensors(out));
  ABSL_RETURN_IF_ERROR(WriteSafetensors((fs::path(out.out_dir) / "model.safetensors").string(),
                                        tensors, {{"format", "pt"}}));
  ABSL_ASSIGN_OR_RETURN(nlohmann::ordered_json config, files::ReadConfigJson(out.source_dir));
  if (out.plan->tied_head) {  // exllamav3 always un-ties; loaders then use lm_head.*.
    config["tie_word_embeddings"] = false;
    if (config.contains("text_config") && config["text_config"].is_object()) {
      config["text_config"]["tie_word_embeddings"] = false;
    }
  }
  config["quantization_config"] = out.quantization_config;
  ABSL_RETURN_IF_ERROR(files::WriteJson((fs::path(out.out_dir) / "config.json").string(), config));
  nlohmann::ordered_json index = out.quantization_config;
  index["tensor_storage"] = TensorStorage(tensors);
  ABSL_RETURN_IF_ERROR(
      files::WriteJson((fs::path(out.out_dir) / "quantization_config.json").string(), index));
  return files::CopyModelFiles(out.source_dir, out.out_dir);
}

}  // namespace twinspan::quantize
