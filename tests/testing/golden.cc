#include "tests/testing/golden.h"

#include <cstdlib>
#include <filesystem>

#include "gtest/gtest.h"

namespace twinspan::testing {

std::string GoldenPath(const std::string& relative) {
  const char* env = std::getenv("TWINSPAN_GOLDEN");
  if (env == nullptr || *env == '\0') env = std::getenv("TWINSPAN_GOLDEN_DEFAULT");
  const std::filesystem::path root = env != nullptr ? env : "";
  const std::filesystem::path path = root / relative;
  if (root.empty() || !std::filesystem::exists(path)) {
    ADD_FAILURE() << "golden data not found: " << path
                  << " (set TWINSPAN_GOLDEN to the shared/golden folder)";
    return "";
  }
  return path.string();
}

}  // namespace twinspan::testing
