#include "kernels/cuda/pdl_scope.h"

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace twinspan::cuda {

absl::StatusOr<PdlScope> ParsePdlScope(std::string_view value) {
  if (value.empty() || value == "all") return PdlScope::kAll;
  if (value == "exl3") return PdlScope::kExl3;
  if (value == "none") return PdlScope::kNone;
  return absl::InvalidArgumentError(
      absl::StrCat("TWINSPAN_CUDA_PDL=", std::string(value), ": expected all, exl3 or none"));
}

PdlScope PdlScopeFromEnv() {
  static const PdlScope scope = [] {
    const char* v = std::getenv("TWINSPAN_CUDA_PDL");
    const absl::StatusOr<PdlScope> parsed = ParsePdlScope(v == nullptr ? "" : v);
    if (parsed.ok()) return *parsed;
    spdlog::warn("{}; using all", std::string(parsed.status().message()));
    return PdlScope::kAll;
  }();
  return scope;
}

}  // namespace twinspan::cuda
