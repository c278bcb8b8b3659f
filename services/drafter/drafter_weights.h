// A DFlash / DFlash2 checkpoint's tensors, loaded and shape-checked against its DrafterConfig.
// The drafter has no embedding or head of its own: those are the target's (see DraftHead).
#ifndef TWINSPAN_SERVICES_DRAFTER_DRAFTER_WEIGHTS_H_
#define TWINSPAN_SERVICES_DRAFTER_DRAFTER_WEIGHTS_H_

#include <cstddef>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/drafter_config.h"
#include "common/safetensors/checkpoint.h"
#include "kernels/cpu/candidate_selector.h"
#include "kernels/cpu/linear.h"
#include "services/weights/drafter_linear.h"

namespace twinspan::drafter {

// GroupedDynamicCausalConv: side 0 mixes a sublayer's input, side 1 its output.
struct DynamicConvWeights {
  std::vector<float> base_kernel;  // [2, Kc, H] (side, tap, channel)
  cpu::LinearWeight projection;    // [2 * Kc * G, H]; each output row reads [side, tap, group].
};

struct DrafterLayerWeights {
  std::vector<float> input_norm, post_attention_norm;  // [H]
  std::vector<float> q_norm, k_norm;                   // [D]
  cpu::LinearWeight q_proj, k_proj, v_proj, o_proj;    // [nH*D, H], [nKV*D, H] x2, [H, nH*D]
  cpu::LinearWeight gate_proj, up_proj, down_proj;     // [I, H] x2, [H, I]
  std::optional<DynamicConvWeights> attention_conv, mlp_conv;  // DFlash2 only.
};

// The selector's codebooks stay in their stored dtype (bf16: 2 x 248,320 x 256 is 254 MB, not 508).
struct Codebook {
  cpu::CodebookType type = cpu::CodebookType::kF32;
  std::vector<std::byte> bytes;  // [V, r]
  int64_t rows = 0;
  int64_t rank = 0;

  cpu::CodebookView view() const { return {type, bytes.data(), rows, rank}; }
};

struct SelectorWeights {
  cpu::LinearWeight hidden_projection;  // [r, H]
  Codebook predecessor, successor;      // [V, r]
};

// Immutable after LoadDrafterWeights; any number of threads may read it.
struct DrafterWeights {
  cpu::LinearWeight fc;            // [H, n_f * H]
  std::vector<float> hidden_norm;  // [H]
  std::vector<float> norm;         // [H]
  std::vector<DrafterLayerWeights> layers;
  std::optional<SelectorWeights> selector;  // DFlash2 only.
};

// Loads every tensor `config` requires (DFlash2 conv and selector tensors only for kDFlash2, so a
// DFlash2 checkpoint opened with kind = kDFlash loads as DFlash v1). Codebooks are read under
// their published names (`candidate_selector.predecessor_codebook`) or with a `.weight` suffix.
// Linears load as LoadDrafterLinear does with `bits`, except `fc`, which always loads as stored
// (the target may fuse taps with it, engine::TapFuser); norms, conv kernels and codebooks never
// change precision.
// Errors: NotFound naming a missing tensor; InvalidArgument naming the tensor, its shape and the
// expected shape for a misshapen one, or a dtype that is not F32/F16/BF16; LoadDrafterLinear's.
absl::StatusOr<DrafterWeights> LoadDrafterWeights(const Checkpoint& checkpoint,
                                                  const DrafterConfig& config,
                                                  LinearBits bits = LinearBits::kAsStored);

}  // namespace twinspan::drafter

#endif  // TWINSPAN_SERVICES_DRAFTER_DRAFTER_WEIGHTS_H_
