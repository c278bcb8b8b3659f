// Fuzz target: any bytes as a model's config.json. The first byte picks the parser (HF config with
// its quantization_config and dflash_config, the target's, the drafter's, quantization_config,
// dflash_config); the rest is JSON text. Each must return a Status or a config whose sizes are
// consistent; nothing may crash, throw or divide by zero.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/config/dflash_config.h"
#include "common/config/drafter_config.h"
#include "common/config/hf_config.h"
#include "common/config/quantization_config.h"
#include "common/config/target_config.h"
#include "nlohmann/json.hpp"

namespace {

void CheckTarget(const twinspan::target::TargetConfig& c) {
  if (c.vocab_size <= 0 || c.hidden_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 ||
      c.num_kv_heads <= 0 || c.head_dim <= 0 || c.num_heads % c.num_kv_heads != 0 ||
      c.rotary_dim % 2 != 0 || c.rotary_dim > c.head_dim ||
      static_cast<int64_t>(c.layer_types.size()) != c.num_layers) {
    std::abort();
  }
}

void CheckDrafter(const twinspan::drafter::DrafterConfig& c) {
  if (c.vocab_size <= 0 || c.hidden_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 ||
      c.num_kv_heads <= 0 || c.head_dim <= 0 || c.num_heads % c.num_kv_heads != 0 ||
      c.block_size < 2 || c.mask_token_id < 0 || c.mask_token_id >= c.vocab_size ||
      static_cast<int64_t>(c.layers.size()) != c.num_layers || c.target_layer_ids.empty()) {
    std::abort();
  }
  if (c.conv_group_size > 0 && c.hidden_size % c.conv_group_size != 0) std::abort();
}

template <typename T>
void ExpectReason(const absl::StatusOr<T>& result) {
  if (!result.ok() && result.status().message().empty()) std::abort();  // every refusal says why
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t parser = data[0] % 5;
  nlohmann::json json = nlohmann::json::parse(reinterpret_cast<const char*>(data) + 1,
                                              reinterpret_cast<const char*>(data) + size, nullptr,
                                              /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  switch (parser) {
    case 0:
      ExpectReason(twinspan::ParseHfConfig(json, "fuzz/config.json"));
      break;
    case 1: {
      auto c = twinspan::target::ParseTargetConfig(json, "fuzz/config.json");
      ExpectReason(c);
      if (c.ok()) CheckTarget(*c);
      break;
    }
    case 2: {
      auto c = twinspan::drafter::ParseDrafterConfig(json, "fuzz/config.json");
      ExpectReason(c);
      if (c.ok()) CheckDrafter(*c);
      break;
    }
    case 3:
      ExpectReason(twinspan::ParseQuantizationConfig(json, "fuzz/config.json"));
      break;
    default: {
      // The whole config.json: its dflash_config object, and the top level for block_size.
      const bool nested = json.is_object() && json.contains("dflash_config");
      ExpectReason(twinspan::ParseDFlashConfig(nested ? json["dflash_config"] : json, json,
                                               "fuzz/config.json"));
      break;
    }
  }
  return 0;
}
