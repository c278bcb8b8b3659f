#include "tests/fuzz/fuzz_files.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace twinspan::fuzz {
namespace {

namespace fs = std::filesystem;

// Removes the scratch folder when the process exits normally (a crash leaves it for a look).
struct ScratchFolder {
  std::string path;
  ScratchFolder() {
    const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    std::string pattern = (base / "twinspan-fuzz-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    path = pattern;
  }
  ~ScratchFolder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

}  // namespace

const std::string& ScratchDir() {
  static const ScratchFolder folder;
  return folder.path;
}

std::string WriteScratch(const std::string& name, std::string_view bytes) {
  std::string path = ScratchDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) std::abort();
  return path;
}

}  // namespace twinspan::fuzz
