// A short identity of a checkpoint folder that the target and its drafter compare at handshake:
// a drafter built for another checkpoint is refused.
#ifndef TWINSPAN_SERVICES_DRAFT_LINK_CHECKPOINT_FINGERPRINT_H_
#define TWINSPAN_SERVICES_DRAFT_LINK_CHECKPOINT_FINGERPRINT_H_

#include <string>

#include "absl/status/statusor.h"

namespace twinspan::engine {

// SHA-256 (hex, first 32 characters) over config.json and, for each *.safetensors file in name
// order, its name, size, JSON header and 16 samples of 4 KiB spread over its data: cheap on a 27B
// checkpoint, and two random checkpoints of the same shapes still differ.
// Errors: NotFound when config.json or every safetensors file is missing.
absl::StatusOr<std::string> CheckpointFingerprint(const std::string& dir);

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_DRAFT_LINK_CHECKPOINT_FINGERPRINT_H_
