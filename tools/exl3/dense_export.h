// Writes one EXL3 linear as a dense fp32 HF weight, for inspection and comparison with other
// tools. Backs `twinspan-exl3 dequant`.
#ifndef TWINSPAN_TOOLS_EXL3_DENSE_EXPORT_H_
#define TWINSPAN_TOOLS_EXL3_DENSE_EXPORT_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "common/safetensors/checkpoint.h"

namespace twinspan::exl3 {

// Writes `out_path` with "weight" F32 [n, k] (HF orientation: W transposed) and, when the linear
// has one, "bias" F32 [n]. Errors from exl3::Weight::Load or the writer, naming the file.
absl::Status ExportDense(const Checkpoint& checkpoint, std::string_view prefix,
                         const std::string& out_path);

}  // namespace twinspan::exl3

#endif  // TWINSPAN_TOOLS_EXL3_DENSE_EXPORT_H_
