#include "services/draft_link/tap_fuser.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config/drafter_config.h"
#include "common/safetensors/tensor_view.h"
#include "common/status.h"
#include "services/draft_link/checkpoint_fingerprint.h"

namespace twinspan::engine {
namespace {

constexpr int64_t kHostChunkRows = 256;  // rows staged per host Fuse step

}  // namespace

absl::StatusOr<std::unique_ptr<TapFuser>> TapFuser::Open(const std::string& drafter_dir,
                                                         backend::Backend* backend,
                                                         drafter::LinearBits bits) {
  if (backend == nullptr) return absl::InvalidArgumentError("TapFuser: a backend is required");
  ABSL_ASSIGN_OR_RETURN(drafter::DrafterConfig config, drafter::LoadDrafterConfig(drafter_dir));
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, Checkpoint::Open(drafter_dir));
  auto fuser = std::unique_ptr<TapFuser>(new TapFuser());
  fuser->backend_ = backend;
  fuser->hidden_ = config.hidden_size;
  fuser->raw_width_ = config.num_taps() * config.hidden_size;
  fuser->eps_ = config.rms_norm_eps;
  fuser->layer_ids_ = config.target_layer_ids;
  // The loader DrafterWeights uses, for the two tensors the fused form needs.
  ABSL_ASSIGN_OR_RETURN(
      fuser->fc_host_,
      drafter::LoadDrafterLinear(*checkpoint, "fc", fuser->hidden_, fuser->raw_width_, bits));
  ABSL_ASSIGN_OR_RETURN(const TensorView norm, checkpoint->Get("hidden_norm.weight"));
  if (norm.shape != std::vector<int64_t>{fuser->hidden_}) {
    return absl::InvalidArgumentError(
        absl::StrCat(drafter_dir, ": tensor hidden_norm.weight has shape [",
                     absl::StrJoin(norm.shape, ", "), "], expected [", fuser->hidden_, "]"));
  }
  ABSL_ASSIGN_OR_RETURN(const std::vector<float> norm_values, ToFloat(norm));
  ABSL_ASSIGN_OR_RETURN(fuser->fc_, backend->UploadLinear(fuser->fc_host_));
  ABSL_ASSIGN_OR_RETURN(fuser->hidden_norm_, backend->UploadFloats(norm_values));
  ABSL_ASSIGN_OR_RETURN(fuser->fingerprint_, CheckpointFingerprint(drafter_dir));
  fuser->checkpoint_ = std::move(checkpoint);
  return fuser;
}

TapFusionWeights TapFuser::weights() const {
  return {fc_.get(), hidden_norm_->floats(), eps_, raw_width_, hidden_};
}

absl::Status TapFuser::FuseOnBackend(const float* raw, int64_t rows, float* fused) const {
  if (rows < 0) {
    return absl::InvalidArgumentError(absl::StrCat("TapFuser: rows = ", rows, " is negative"));
  }
  if (rows == 0) return absl::OkStatus();
  return FuseTapRows(*backend_, weights(), raw, rows, fused);
}

absl::Status TapFuser::Fuse(const float* raw, int64_t rows, float* fused) const {
  if (rows < 0) {
    return absl::InvalidArgumentError(absl::StrCat("TapFuser: rows = ", rows, " is negative"));
  }
  if (rows == 0) return absl::OkStatus();
  absl::MutexLock lock(&host_mu_);
  const int64_t chunk = std::min(rows, kHostChunkRows);
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<backend::Buffer> in,
                        backend_->AllocateFloats(chunk * raw_width_));
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<backend::Buffer> out,
                        backend_->AllocateFloats(chunk * hidden_));
  return FuseHostTapRows(*backend_, weights(), raw, rows, fused, *in, *out, chunk);
}

}  // namespace twinspan::engine
