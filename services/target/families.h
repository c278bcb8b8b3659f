// Each family's factory, called by OpenTargetModel with the parsed config and the opened
// checkpoint. Defined in the family's own file (qwen3_model.cc, qwen3_5_model.cc). EXL3 weights
// point into the checkpoint's memory map: the model must keep `checkpoint` alive
// (DecoderModel::KeepAlive).
#ifndef TWINSPAN_SERVICES_TARGET_FAMILIES_H_
#define TWINSPAN_SERVICES_TARGET_FAMILIES_H_

#include <memory>

#include "absl/status/statusor.h"
#include "common/config/target_config.h"
#include "common/safetensors/checkpoint.h"
#include "services/target/target_model.h"

namespace twinspan::target {

// REQUIRES: config.family == TargetFamily::kQwen3; options validated.
absl::StatusOr<std::unique_ptr<TargetModel>> OpenQwen3Model(
    const TargetConfig& config, std::shared_ptr<const Checkpoint> checkpoint,
    const TargetOptions& options);

// REQUIRES: config.family == TargetFamily::kQwen35; options validated.
absl::StatusOr<std::unique_ptr<TargetModel>> OpenQwen35Model(
    const TargetConfig& config, std::shared_ptr<const Checkpoint> checkpoint,
    const TargetOptions& options);

}  // namespace twinspan::target

#endif  // TWINSPAN_SERVICES_TARGET_FAMILIES_H_
