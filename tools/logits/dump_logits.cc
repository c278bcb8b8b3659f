#include "tools/logits/dump_logits.h"

#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/safetensors/writer.h"
#include "common/status.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/parallel.h"
#include "services/target/target_model.h"

namespace twinspan::tools {

absl::StatusOr<std::vector<int32_t>> ParseIds(const std::string& text) {
  std::vector<int32_t> ids;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    int32_t id;
    if (!absl::SimpleAtoi(item, &id) || id < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--ids: \"%s\" is not a non-negative token id", item));
    }
    ids.push_back(id);
  }
  if (ids.empty()) return absl::InvalidArgumentError("--ids: no token ids");
  return ids;
}

absl::Status DumpLogits(const DumpLogitsOptions& options) {
  if (options.ids.empty()) return absl::InvalidArgumentError("no token ids");
  if (options.threads < 1) {
    return absl::InvalidArgumentError(absl::StrFormat("--threads %d", options.threads));
  }
  cpu::ThreadPool pool(options.threads);
  const std::unique_ptr<backend::Backend> backend = cpu::NewCpuBackend(&pool);
  target::TargetOptions target_options;
  target_options.backend = backend.get();
  target_options.kv_dtype = options.kv_dtype;
  target_options.context = static_cast<int64_t>(options.ids.size());
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::TargetModel> model,
                        target::OpenTargetModel(options.model_dir, target_options));
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::SequenceState> state, model->NewSequence());
  target::ForwardRequest request;
  request.tokens = options.ids;
  request.capture_hidden_states = true;
  target::ForwardResult result;
  ABSL_RETURN_IF_ERROR(model->Forward(*state, request, &result));

  const int64_t rows = result.rows;
  const int64_t layers = model->config().num_layers;
  const int64_t hidden = model->config().hidden_size;
  // HF output_hidden_states: embedding, layers 0..L-2 outputs, then the final norm of layer L-1.
  std::vector<float> hidden_states = result.embeddings;
  hidden_states.insert(hidden_states.end(), result.layer_outputs.begin(),
                       result.layer_outputs.begin() + (layers - 1) * rows * hidden);
  hidden_states.insert(hidden_states.end(), result.final_norm.begin(), result.final_norm.end());
  const std::vector<int64_t> ids(options.ids.begin(), options.ids.end());
  std::vector<OwnedTensor> tensors;
  tensors.push_back(OwnedTensor::FromInt64("input_ids", {rows}, ids));
  tensors.push_back(
      OwnedTensor::FromFloats("logits", {rows, model->config().vocab_size}, result.logits));
  tensors.push_back(
      OwnedTensor::FromFloats("hidden_states", {layers + 1, rows, hidden}, hidden_states));
  tensors.push_back(
      OwnedTensor::FromFloats("layer_outputs", {layers, rows, hidden}, result.layer_outputs));
  return WriteSafetensors(options.out_path, tensors,
                          {{"model_type", model->config().model_type},
                           {"kv_dtype", options.kv_dtype == cpu::KvDtype::kF32 ? "f32" : "bf16"}});
}

}  // namespace twinspan::tools
