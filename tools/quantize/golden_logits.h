// A quantized qwen3_5 tiny model's logits error against the HF bf16 model, beside exllamav3's
// (shared/golden/exl3_qwen3_5_tiny_ref/logits.safetensors, README section 4): both measured
// against hf_fp32_bf16weights_logits_i on the same three sequences.
#ifndef TWINSPAN_TOOLS_QUANTIZE_GOLDEN_LOGITS_H_
#define TWINSPAN_TOOLS_QUANTIZE_GOLDEN_LOGITS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/cpu/parallel.h"

namespace twinspan::quantize {

struct LogitsComparison {
  std::vector<double> ours;    // rel_fro per sequence: our forward of `model_dir` vs HF.
  std::vector<double> theirs;  // exl3_logits_i vs HF.
  double ours_all = 0;         // Over the three sequences together.
  double theirs_all = 0;
};

// Runs `model_dir` (any checkpoint our target loads) on input_ids_0..2. Errors of the loaders and
// the forward, naming the file.
absl::StatusOr<LogitsComparison> CompareGoldenLogits(cpu::ThreadPool* pool,
                                                     const std::string& model_dir,
                                                     const std::string& golden_dir);

}  // namespace twinspan::quantize

#endif  // TWINSPAN_TOOLS_QUANTIZE_GOLDEN_LOGITS_H_
