// Writes EXL3 linears as dense HF weights, for inspection and for running a quantized model in
// other frameworks exactly. Backs `twinspan-exl3 dequant` and `twinspan-exl3 dequant-model`.
#ifndef TWINSPAN_TOOLS_EXL3_DENSE_EXPORT_H_
#define TWINSPAN_TOOLS_EXL3_DENSE_EXPORT_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "common/safetensors/checkpoint.h"
#include "common/safetensors/dtype.h"

namespace twinspan::exl3 {

// Writes `out_path` with "weight" F32 [n, k] (HF orientation: W transposed) and, when the linear
// has one, "bias" F32 [n]. Errors from exl3::Weight::Load or the writer, naming the file.
absl::Status ExportDense(const Checkpoint& checkpoint, std::string_view prefix,
                         const std::string& out_path);

// Writes the whole EXL3 checkpoint in `in_dir` as a dense HF checkpoint in `out_dir`: every EXL3
// linear P as P.weight [n, k] = (diag(suh) H W_hat H diag(svh))^T (exl3::DequantizeDense, fp32,
// then rounded to `dtype`, F32 or BF16) and P.bias in `dtype` when it has one; every other tensor
// copied as stored; config.json without quantization_config; the tokenizer, generation and chat
// template files copied. The folder is staged and appears whole or not at all. Errors: the
// output folder's (common/files/staged_dir.h), the loaders', InvalidArgument for another dtype.
absl::Status ExportDenseModel(const std::string& in_dir, const std::string& out_dir, DType dtype);

}  // namespace twinspan::exl3

#endif  // TWINSPAN_TOOLS_EXL3_DENSE_EXPORT_H_
