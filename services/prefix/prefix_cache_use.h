// What a prompt-prefix cache (the target's or the drafter's) holds, for metrics and logs.
#ifndef TWINSPAN_SERVICES_PREFIX_PREFIX_CACHE_USE_H_
#define TWINSPAN_SERVICES_PREFIX_PREFIX_CACHE_USE_H_

#include <cstddef>
#include <cstdint>

namespace twinspan::engine {

struct PrefixCacheUse {
  size_t bytes = 0;
  int64_t blocks = 0;
};

}  // namespace twinspan::engine

#endif  // TWINSPAN_SERVICES_PREFIX_PREFIX_CACHE_USE_H_
