#include "tools/quantize/golden_logits.h"

#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/safetensors/checkpoint.h"
#include "common/status.h"
#include "services/target/target_model.h"

namespace twinspan::quantize {
namespace {

struct Error {
  double diff = 0, norm = 0;
  void Add(const std::vector<float>& got, const std::vector<float>& want) {
    for (size_t i = 0; i < want.size(); ++i) {
      diff += (double{got[i]} - want[i]) * (double{got[i]} - want[i]);
      norm += double{want[i]} * want[i];
    }
  }
  double rel_fro() const { return std::sqrt(diff / norm); }
};

}  // namespace

absl::StatusOr<LogitsComparison> CompareGoldenLogits(cpu::ThreadPool* pool,
                                                     const std::string& model_dir,
                                                     const std::string& golden_dir) {
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> ref,
                        Checkpoint::Open(golden_dir + "/exl3_qwen3_5_tiny_ref/logits.safetensors"));
  target::TargetOptions options;
  options.pool = pool;
  options.context = 128;
  options.kv_dtype = cpu::KvDtype::kF32;
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::TargetModel> model,
                        target::OpenTargetModel(model_dir, options));
  LogitsComparison out;
  Error ours_all, theirs_all;
  for (int s = 0; s < 3; ++s) {
    ABSL_ASSIGN_OR_RETURN(const TensorView ids_view, ref->Get(absl::StrCat("input_ids_", s)));
    ABSL_ASSIGN_OR_RETURN(const TensorView hf_view,
                          ref->Get(absl::StrCat("hf_fp32_bf16weights_logits_", s)));
    ABSL_ASSIGN_OR_RETURN(const TensorView exl3_view, ref->Get(absl::StrCat("exl3_logits_", s)));
    ABSL_ASSIGN_OR_RETURN(const std::vector<int64_t> ids64, ToInt64(ids_view));
    ABSL_ASSIGN_OR_RETURN(const std::vector<float> hf, ToFloat(hf_view));
    ABSL_ASSIGN_OR_RETURN(const std::vector<float> exl3, ToFloat(exl3_view));
    const std::vector<int32_t> ids(ids64.begin(), ids64.end());
    ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::SequenceState> state, model->NewSequence());
    target::ForwardRequest request;
    request.tokens = ids;
    target::ForwardResult result;
    ABSL_RETURN_IF_ERROR(model->Forward(*state, request, &result));
    if (result.logits.size() != hf.size()) {
      return absl::InvalidArgumentError(absl::StrCat(model_dir, ": ", result.logits.size(),
                                                     " logits for sequence ", s,
                                                     ", the reference has ", hf.size()));
    }
    Error ours, theirs;
    ours.Add(result.logits, hf);
    theirs.Add(exl3, hf);
    ours_all.Add(result.logits, hf);
    theirs_all.Add(exl3, hf);
    out.ours.push_back(ours.rel_fro());
    out.theirs.push_back(theirs.rel_fro());
  }
  out.ours_all = ours_all.rel_fro();
  out.theirs_all = theirs_all.rel_fro();
  return out;
}

}  // namespace twinspan::quantize
