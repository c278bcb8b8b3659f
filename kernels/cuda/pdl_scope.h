// Which CUDA launches may start early (programmatic dependent launch, pdl.cuh): the value of
// TWINSPAN_CUDA_PDL, for timing one binary with and without it. Plain C++, so ctest checks it.
#ifndef TWINSPAN_KERNELS_CUDA_PDL_SCOPE_H_
#define TWINSPAN_KERNELS_CUDA_PDL_SCOPE_H_

#include <string_view>

#include "absl/status/statusor.h"

namespace twinspan::cuda {

enum class PdlScope { kAll, kExl3, kNone };

// "all" (also the empty string), "exl3" (the EXL3 linear only) or "none"; InvalidArgument naming
// the variable and its values for anything else.
absl::StatusOr<PdlScope> ParsePdlScope(std::string_view value);

// TWINSPAN_CUDA_PDL, read once; an unknown value is reported on stderr and means all.
PdlScope PdlScopeFromEnv();

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_PDL_SCOPE_H_
