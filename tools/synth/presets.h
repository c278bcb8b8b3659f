// twinspan-synth's presets by name: the Qwen3.8-27B EXL3 target and its DFlash2 drafter at the real
// shapes, and test-size twins with the same structure.
#ifndef TWINSPAN_TOOLS_SYNTH_PRESETS_H_
#define TWINSPAN_TOOLS_SYNTH_PRESETS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/synth/qwen35_preset.h"
#include "tools/synth/tensor_spec.h"

namespace twinspan::synth {

struct PresetOptions {
  Exl3Options exl3;               // Targets only.
  std::optional<int64_t> layers;  // Targets only: fewer (or more) decoder layers.
  int drafter_bits = 16;          // Drafters only: 16 (bf16) or 4 (Q4).
};

// "qwen3.8-27b", "qwen3.8-27b-dflash2", "qwen3.8-tiny", "qwen3.8-tiny-dflash2".
std::vector<std::string> PresetNames();
bool IsDrafterPreset(const std::string& name);

// The checkpoint a preset describes. NotFound listing the presets for an unknown name;
// InvalidArgument for an option the preset does not take or a bad value.
absl::StatusOr<CheckpointSpec> MakePreset(const std::string& name, const PresetOptions& options,
                                          bool target_options_given, bool drafter_options_given);

}  // namespace twinspan::synth

#endif  // TWINSPAN_TOOLS_SYNTH_PRESETS_H_
