#include "tools/synth/presets.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/synth/dflash2_preset.h"

namespace twinspan::synth {

std::vector<std::string> PresetNames() {
  return {"qwen3.8-27b", "qwen3.8-27b-dflash2", "qwen3.8-tiny", "qwen3.8-tiny-dflash2"};
}

bool IsDrafterPreset(const std::string& name) { return name.ends_with("-dflash2"); }

absl::StatusOr<CheckpointSpec> MakePreset(const std::string& name, const PresetOptions& options,
                                          bool target_options_given, bool drafter_options_given) {
  const std::vector<std::string> names = PresetNames();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    return absl::NotFoundError(
        absl::StrFormat("unknown preset \"%s\"; presets: %s", name, absl::StrJoin(names, ", ")));
  }
  if (IsDrafterPreset(name)) {
    if (target_options_given) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "preset %s is a drafter: --bits, --head-bits, --codebook and --layers are for targets",
          name));
    }
    return DFlash2Checkpoint(
        name == "qwen3.8-27b-dflash2" ? Qwen38_27BDFlash2() : Qwen38TinyDFlash2(),
        options.drafter_bits);
  }
  if (drafter_options_given) {
    return absl::InvalidArgumentError(
        absl::StrFormat("preset %s is a target: --drafter-bits is for drafters", name));
  }
  Qwen35Shape shape = name == "qwen3.8-27b" ? Qwen38_27B() : Qwen38Tiny();
  if (options.layers) shape.layers = *options.layers;
  return Qwen35Checkpoint(shape, options.exl3);
}

}  // namespace twinspan::synth
