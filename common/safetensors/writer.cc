#include "common/safetensors/writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace twinspan {

OwnedTensor OwnedTensor::FromFloats(std::string name, std::vector<int64_t> shape,
                                    const std::vector<float>& values) {
  return FromRaw(std::move(name), DType::kF32, std::move(shape), values);
}

OwnedTensor OwnedTensor::FromInt64(std::string name, std::vector<int64_t> shape,
                                   const std::vector<int64_t>& values) {
  return FromRaw(std::move(name), DType::kI64, std::move(shape), values);
}

absl::Status WriteSafetensors(const std::string& path, const std::vector<OwnedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const OwnedTensor& tensor : tensors) {
    if (tensor.name.empty() || tensor.name == "__metadata__" || !names.insert(tensor.name).second) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": tensor name \"", tensor.name,
                                                     "\" is empty, reserved or used twice"));
    }
    uint64_t expected = DTypeSize(tensor.dtype);
    for (int64_t d : tensor.shape) {
      if (d < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": tensor \"", tensor.name, "\" has a negative dimension ", d));
      }
      expected *= static_cast<uint64_t>(d);
    }
    if (expected != tensor.bytes.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensor \"", tensor.name, "\" has ", tensor.bytes.size(), " bytes, ",
                       std::string(DTypeName(tensor.dtype)), " x shape needs ", expected));
    }
    header[tensor.name] = {{"dtype", DTypeName(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + expected}}};
    offset += expected;
  }
  std::string text = header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text.append((8 - text.size() % 8) % 8, ' ');  // Keeps the data section 8-byte aligned.
  uint8_t length[8];
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(n >> (8 * i));

  FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr) {
    return absl::InternalError(
        absl::StrCat(path, ": cannot open for writing: ", std::strerror(errno)));
  }
  bool ok = std::fwrite(length, 1, 8, out) == 8 &&
            std::fwrite(text.data(), 1, text.size(), out) == text.size();
  for (const OwnedTensor& tensor : tensors) {
    if (!ok) break;
    ok = tensor.bytes.empty() ||
         std::fwrite(tensor.bytes.data(), 1, tensor.bytes.size(), out) == tensor.bytes.size();
  }
  ok = (std::fclose(out) == 0) && ok;
  if (!ok) return absl::InternalError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

}  // namespace twinspan
