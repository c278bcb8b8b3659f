#include "services/target/server/keyed_token_sampler.h"

#include "common/sampler/keyed_sampler.h"
#include "common/status.h"

namespace twinspan::serving {
namespace {

class KeyedTokenSampler : public engine::TokenSampler {
 public:
  absl::StatusOr<uint32_t> Sample(absl::Span<const float> logits,
                                  const engine::SamplingOptions& options,
                                  int64_t position) const override {
    sampler::SamplingParams params;
    params.temperature = options.temperature;
    params.top_k = options.top_k;
    params.top_p = options.top_p;
    params.min_p = options.min_p;
    ABSL_ASSIGN_OR_RETURN(int32_t id, sampler_.Sample(logits, params, options.seed, position));
    return static_cast<uint32_t>(id);
  }

 private:
  sampler::KeyedSampler sampler_;
};

}  // namespace

std::unique_ptr<engine::TokenSampler> MakeKeyedTokenSampler() {
  return std::make_unique<KeyedTokenSampler>();
}

}  // namespace twinspan::serving
