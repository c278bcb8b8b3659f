// twinspan-logits' work: one forward of a prompt through a target model, written as fp32
// safetensors
// (`logits` [rows, vocab], `hidden_states` [layers + 1, rows, hidden] in HF's output_hidden_states
// layout, `layer_outputs` [layers, rows, hidden], `input_ids` I64 [rows]) for comparison with a
// reference implementation.
#ifndef TWINSPAN_TOOLS_LOGITS_DUMP_LOGITS_H_
#define TWINSPAN_TOOLS_LOGITS_DUMP_LOGITS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/cpu/kv_cache.h"

namespace twinspan::tools {

struct DumpLogitsOptions {
  std::string model_dir;
  std::vector<int32_t> ids;
  std::string out_path;
  int threads = 1;
  // f32 by default: a reference comparison wants no bf16 rounding of K/V.
  cpu::KvDtype kv_dtype = cpu::KvDtype::kF32;
};

// "1,2,3" -> {1, 2, 3}. InvalidArgument naming the bad item for anything but non-negative
// integers separated by commas (spaces allowed), or an empty list.
absl::StatusOr<std::vector<int32_t>> ParseIds(const std::string& text);

// Opens the model, runs the ids as one forward and writes the file. Errors from the model
// (NotFound, InvalidArgument for ids outside the vocabulary, ...) and the writer.
absl::Status DumpLogits(const DumpLogitsOptions& options);

}  // namespace twinspan::tools

#endif  // TWINSPAN_TOOLS_LOGITS_DUMP_LOGITS_H_
