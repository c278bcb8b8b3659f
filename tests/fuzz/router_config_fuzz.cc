// Fuzz target: any bytes as the router's JSON config. The parser must return a Status or a config
// that keeps every promise its header makes; nothing may crash or throw.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "services/router/router_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<twinspan::router::RouterConfig> config =
      twinspan::router::ParseRouterConfig(text, "fuzz.json");
  if (!config.ok()) {
    if (config.status().message().empty()) std::abort();  // every refusal says why
    return 0;
  }
  if (config->pools.empty() || config->max_retries < 0 || config->max_retries > 10 ||
      config->max_message_bytes < (1 << 20)) {
    std::abort();
  }
  for (const twinspan::router::PoolConfig& pool : config->pools) {
    if (pool.variant.empty() || !(pool.weight > 0) || pool.workers.empty()) std::abort();
    for (const std::string& worker : pool.workers) {
      if (worker.empty()) std::abort();
    }
    for (const twinspan::router::LaunchSpec& spec : pool.launch) {
      if (spec.binary.empty() || spec.name.empty()) std::abort();
    }
  }
  return 0;
}
