#include "services/draft_link/checkpoint_fingerprint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/hash/sha256.h"
#include "common/status.h"

namespace twinspan::engine {
namespace {

absl::StatusOr<std::string> ReadRange(const std::filesystem::path& path, uint64_t offset,
                                      uint64_t size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("fingerprint: cannot read ", path.string()));
  in.seekg(static_cast<std::streamoff>(offset));
  std::string bytes(size, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

}  // namespace

absl::StatusOr<std::string> CheckpointFingerprint(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path config = fs::path(dir) / "config.json";
  if (!fs::exists(config, ec)) {
    return absl::NotFoundError(absl::StrCat("fingerprint: ", config.string(), " is missing"));
  }
  ABSL_ASSIGN_OR_RETURN(hash::Sha256 digest, hash::Sha256::Create());
  ABSL_ASSIGN_OR_RETURN(std::string config_bytes, ReadRange(config, 0, fs::file_size(config)));
  ABSL_RETURN_IF_ERROR(digest.Update(config_bytes));
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".safetensors") files.push_back(entry.path());
  }
  if (files.empty()) {
    return absl::NotFoundError(absl::StrCat("fingerprint: no *.safetensors in ", dir));
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    const uint64_t size = fs::file_size(file, ec);
    ABSL_RETURN_IF_ERROR(digest.Update(absl::StrCat(file.filename().string(), ":", size, ";")));
    ABSL_ASSIGN_OR_RETURN(std::string head, ReadRange(file, 0, 8));
    uint64_t header_size = 0;
    for (size_t i = 0; i < head.size(); ++i) {
      header_size |= static_cast<uint64_t>(static_cast<unsigned char>(head[i])) << (8 * i);
    }
    header_size = std::min<uint64_t>(header_size, size);
    ABSL_ASSIGN_OR_RETURN(std::string header, ReadRange(file, 8, header_size));
    ABSL_RETURN_IF_ERROR(digest.Update(header));
    const uint64_t data_start = 8 + header_size;
    const uint64_t data_size = size > data_start ? size - data_start : 0;
    for (int sample = 0; sample < 16 && data_size > 0; ++sample) {
      const uint64_t offset = data_start + data_size * sample / 16;
      ABSL_ASSIGN_OR_RETURN(std::string bytes, ReadRange(file, offset, 4096));
      ABSL_RETURN_IF_ERROR(digest.Update(bytes));
    }
  }
  ABSL_ASSIGN_OR_RETURN(std::string hex, digest.FinishHex());
  return hex.substr(0, 32);
}

}  // namespace twinspan::engine
