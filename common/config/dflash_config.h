// A DFlash / DFlash2 drafter's "dflash_config" (z-lab/dflash), with the top-level spellings some
// checkpoints use instead.
#ifndef TWINSPAN_COMMON_CONFIG_DFLASH_CONFIG_H_
#define TWINSPAN_COMMON_CONFIG_DFLASH_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace twinspan {

struct DFlashConfig {
  std::vector<int64_t> target_layer_ids;  // Target layers whose outputs are tapped.
  int64_t mask_token_id = 0;
  std::optional<int64_t> block_size;  // From dflash_config, else the top level (DFlash v1).
  // DFlash2 only; all absent for a v1 drafter.
  std::optional<int64_t> conv_group_size;
  std::optional<int64_t> conv_kernel_size;
  std::optional<int64_t> selector_rank;
  std::optional<int64_t> selector_top_k;

  // True when the DFlash2 dynamic conv and candidate selector are configured.
  bool is_dflash2() const { return conv_kernel_size.has_value() || selector_rank.has_value(); }
};

// Parses config.json's `dflash_config` object; `top_level` is the whole config.json, consulted
// for block_size. InvalidArgument naming `where` and the key for a missing or empty
// target_layer_ids, a missing mask_token_id, a wrong type, or a non-positive size.
absl::StatusOr<DFlashConfig> ParseDFlashConfig(const nlohmann::json& dflash_config,
                                               const nlohmann::json& top_level,
                                               std::string_view where);

}  // namespace twinspan

#endif  // TWINSPAN_COMMON_CONFIG_DFLASH_CONFIG_H_
