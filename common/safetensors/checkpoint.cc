#include "common/safetensors/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace twinspan {
namespace {

namespace fs = std::filesystem;

constexpr char kIndexName[] = "model.safetensors.index.json";
constexpr char kSingleName[] = "model.safetensors";

// Reads the index's weight_map: tensor name -> shard file name.
absl::StatusOr<std::map<std::string, std::string>> ReadWeightMap(const fs::path& index_path) {
  std::ifstream in(index_path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(index_path.string(), ": cannot open"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const nlohmann::json index =
      nlohmann::json::parse(buffer.str(), nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded() || !index.is_object()) {
    return absl::DataLossError(absl::StrCat(index_path.string(), ": not a JSON object"));
  }
  const auto map_it = index.find("weight_map");
  if (map_it == index.end() || !map_it->is_object()) {
    return absl::DataLossError(absl::StrCat(index_path.string(), ": no \"weight_map\" object"));
  }
  std::map<std::string, std::string> weight_map;
  for (auto it = map_it->begin(); it != map_it->end(); ++it) {
    if (!it.value().is_string()) {
      return absl::DataLossError(absl::StrCat(index_path.string(), ": weight_map entry \"",
                                              it.key(), "\" is not a file name"));
    }
    const std::string& shard = it.value().get_ref<const std::string&>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..") {
      return absl::DataLossError(absl::StrCat(index_path.string(), ": weight_map entry \"",
                                              it.key(), "\" names \"", shard,
                                              "\", not a file beside the index"));
    }
    weight_map[it.key()] = shard;
  }
  return weight_map;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& dir_or_file) {
  std::error_code error;
  const fs::path root(dir_or_file);
  if (!fs::exists(root, error)) {
    return absl::NotFoundError(absl::StrCat(dir_or_file, ": no such file or directory"));
  }
  std::unique_ptr<Checkpoint> checkpoint(new Checkpoint(dir_or_file));
  auto add_file = [&](const fs::path& path) -> absl::Status {
    ABSL_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file,
                          SafetensorsFile::Open(path.string()));
    for (const TensorView& view : file->tensors()) {
      auto [it, inserted] = checkpoint->owner_.emplace(view.name, file.get());
      if (!inserted) {
        return absl::DataLossError(absl::StrCat(dir_or_file, ": tensor \"", view.name,
                                                "\" is in both ", it->second->path(), " and ",
                                                path.string()));
      }
    }
    checkpoint->files_.push_back(std::move(file));
    return absl::OkStatus();
  };

  if (!fs::is_directory(root, error)) {
    ABSL_RETURN_IF_ERROR(add_file(root));
    return checkpoint;
  }
  const fs::path index_path = root / kIndexName;
  if (fs::exists(index_path, error)) {
    ABSL_ASSIGN_OR_RETURN(auto weight_map, ReadWeightMap(index_path));
    std::set<std::string> shards;
    for (const auto& [name, shard] : weight_map) shards.insert(shard);
    for (const std::string& shard : shards) ABSL_RETURN_IF_ERROR(add_file(root / shard));
    for (const auto& [name, shard] : weight_map) {
      const SafetensorsFile* owner = checkpoint->FileOf(name);
      if (owner == nullptr || fs::path(owner->path()).filename() != shard) {
        return absl::DataLossError(absl::StrCat(index_path.string(), ": tensor \"", name,
                                                "\" is listed in shard ", shard,
                                                " but that shard does not hold it"));
      }
    }
    return checkpoint;
  }
  const fs::path single = root / kSingleName;
  if (fs::exists(single, error)) {
    ABSL_RETURN_IF_ERROR(add_file(single));
    return checkpoint;
  }
  return absl::NotFoundError(
      absl::StrCat(dir_or_file, ": neither ", kIndexName, " nor ", kSingleName, " found"));
}

const SafetensorsFile* Checkpoint::FileOf(std::string_view name) const {
  auto it = owner_.find(name);
  return it == owner_.end() ? nullptr : it->second;
}

const TensorView* Checkpoint::Find(std::string_view name) const {
  const SafetensorsFile* file = FileOf(name);
  return file == nullptr ? nullptr : file->Find(name);
}

absl::StatusOr<TensorView> Checkpoint::Get(std::string_view name) const {
  const TensorView* view = Find(name);
  if (view == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("tensor \"", std::string(name), "\" not found in checkpoint ", path_));
  }
  return *view;
}

absl::StatusOr<std::vector<float>> Checkpoint::Floats(std::string_view name) const {
  absl::StatusOr<TensorView> view = Get(name);
  if (!view.ok()) return view.status();
  absl::StatusOr<std::vector<float>> values = ToFloat(*view);
  if (!values.ok() && view->dtype != DType::kF32 && view->dtype != DType::kF16 &&
      view->dtype != DType::kBF16) {
    return absl::InvalidArgumentError(absl::StrCat(
        FileOf(name)->path(), ": tensor \"", std::string(name), "\" is ",
        std::string(DTypeName(view->dtype)),
        "; this model loads F32, F16 or BF16 weights (and EXL3 linears): the file was written "
        "for another runtime or damaged; export the checkpoint again in bf16"));
  }
  return values;
}

std::vector<std::string> Checkpoint::Names() const {
  std::vector<std::string> names;
  names.reserve(owner_.size());
  for (const auto& [name, file] : owner_) names.push_back(name);
  return names;
}

}  // namespace twinspan
