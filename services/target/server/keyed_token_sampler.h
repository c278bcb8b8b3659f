// engine::TokenSampler over common/sampler's KeyedSampler (Philox keyed by seed and position).
#ifndef TWINSPAN_SERVICES_TARGET_SERVER_KEYED_TOKEN_SAMPLER_H_
#define TWINSPAN_SERVICES_TARGET_SERVER_KEYED_TOKEN_SAMPLER_H_

#include <memory>

#include "services/target/engine/verifier_model.h"

namespace twinspan::serving {

std::unique_ptr<engine::TokenSampler> MakeKeyedTokenSampler();

}  // namespace twinspan::serving

#endif  // TWINSPAN_SERVICES_TARGET_SERVER_KEYED_TOKEN_SAMPLER_H_
