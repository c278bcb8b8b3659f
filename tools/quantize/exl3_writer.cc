#include "tools/quantize/exl3_writer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "common/exl3/format.h"
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

absl::Status WriteJson(const std::string& path, const nlohmann::ordered_json& value) {
  std::ofstream f(path);
  f << value.dump(4) << "\n";
  f.close();
  if (!f) return absl::InternalError(absl::StrFormat("cannot write %s", path));
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::ordered_json> ReadConfigJson(const std::string& dir) {
  const std::string path = (fs::path(dir) / "config.json").string();
  std::ifstream f(path);
  if (!f) return absl::NotFoundError(absl::StrFormat("%s: cannot open", path));
  std::stringstream text;
  text << f.rdbuf();
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(text.str(), nullptr, false);
  if (config.is_discarded() || !config.is_object()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s is not a JSON object", path));
  }
  return config;
}

absl::Status CopyModelFiles(const std::string& from, const std::string& to) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(from, ec)) {
    const std::string name = e.path().filename().string();
    const bool wanted = name == "tokenizer.json" || name == "tokenizer_config.json" ||
                        name == "generation_config.json" || name == "special_tokens_map.json" ||
                        absl::StartsWith(name, "chat_template");
    if (!wanted || !e.is_regular_file()) continue;
    fs::copy_file(e.path(), fs::path(to) / name, ec);
    // A read-only source (a shared folder) must not make the copy read-only.
    if (!ec)
      fs::permissions(fs::path(to) / name, fs::perms::owner_write, fs::perm_options::add, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrFormat("cannot copy %s to %s: %s", e.path().string(), to, ec.message()));
    }
  }
  if (ec) return absl::InternalError(absl::StrFormat("cannot list %s: %s", from, ec.message()));
  return absl::OkStatus();
}

absl::Status WriteExl3Checkpoint(const Exl3Output& out) {
  ABSL_ASSIGN_OR_RETURN(const std::vector<OwnedTensor> tensors, OutputTensors(out));
  ABSL_RETURN_IF_ERROR(WriteSafetensors((fs::path(out.out_dir) / "model.safetensors").string(),
                                        tensors, {{"format", "pt"}}));
  ABSL_ASSIGN_OR_RETURN(nlohmann::ordered_json config, ReadConfigJson(out.source_dir));
  if (out.plan->tied_head) {  // exllamav3 always un-ties; loaders then use lm_head.*.
    config["tie_word_embeddings"] = false;
    if (config.contains("text_config") && config["text_config"].is_object()) {
      config["text_config"]["tie_word_embeddings"] = false;
    }
  }
  config["quantization_config"] = out.quantization_config;
  ABSL_RETURN_IF_ERROR(WriteJson((fs::path(out.out_dir) / "config.json").string(), config));
  nlohmann::ordered_json index = out.quantization_config;
  index["tensor_storage"] = TensorStorage(tensors);
  ABSL_RETURN_IF_ERROR(
      WriteJson((fs::path(out.out_dir) / "quantization_config.json").string(), index));
  return CopyModelFiles(out.source_dir, out.out_dir);
}

}  // namespace twinspan::quantize
