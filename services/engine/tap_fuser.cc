#include "services/engine/tap_fuser.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/safetensors/checkpoint.h"
#include "common/safetensors/tensor_view.h"
#include "common/status.h"
#include "kernels/cpu/rms_norm.h"
#include "services/drafter/drafter_config.h"
#include "services/engine/checkpoint_fingerprint.h"
#include "services/target/weight_loader.h"

namespace twinspan::engine {

absl::StatusOr<std::unique_ptr<TapFuser>> TapFuser::Open(const std::string& drafter_dir,
                                                         cpu::ThreadPool* pool) {
  ABSL_ASSIGN_OR_RETURN(drafter::DrafterConfig config, drafter::LoadDrafterConfig(drafter_dir));
  ABSL_ASSIGN_OR_RETURN(const std::unique_ptr<Checkpoint> checkpoint,
                        Checkpoint::Open(drafter_dir));
  auto fuser = std::unique_ptr<TapFuser>(new TapFuser());
  fuser->ctx_ = cpu::Context{.pool = pool};
  fuser->hidden_ = config.hidden_size;
  fuser->raw_width_ = config.num_taps() * config.hidden_size;
  fuser->eps_ = config.rms_norm_eps;
  fuser->layer_ids_ = config.target_layer_ids;
  // The same loaders DrafterWeights uses, for the two tensors the fused form needs.
  ABSL_ASSIGN_OR_RETURN(fuser->fc_,
                        target::LoadLinear(*checkpoint, "fc", fuser->hidden_, fuser->raw_width_));
  ABSL_ASSIGN_OR_RETURN(const TensorView norm, checkpoint->Get("hidden_norm.weight"));
  if (norm.shape != std::vector<int64_t>{fuser->hidden_}) {
    return absl::InvalidArgumentError(
        absl::StrCat(drafter_dir, ": tensor hidden_norm.weight has shape [",
                     absl::StrJoin(norm.shape, ", "), "], expected [", fuser->hidden_, "]"));
  }
  ABSL_ASSIGN_OR_RETURN(fuser->hidden_norm_, ToFloat(norm));
  ABSL_ASSIGN_OR_RETURN(fuser->fingerprint_, CheckpointFingerprint(drafter_dir));
  return fuser;
}

absl::Status TapFuser::Fuse(const float* raw, int64_t rows, float* fused) const {
  if (rows < 0) {
    return absl::InvalidArgumentError(absl::StrCat("TapFuser: rows = ", rows, " is negative"));
  }
  if (rows == 0) return absl::OkStatus();
  // Exactly DrafterModel::FuseTaps: fc, then hidden_norm in place.
  ABSL_RETURN_IF_ERROR(cpu::Linear(ctx_, raw, rows, fc_, fused));
  return cpu::RmsNorm(ctx_, fused, rows, hidden_, hidden_norm_.data(), eps_, fused);
}

}  // namespace twinspan::engine
