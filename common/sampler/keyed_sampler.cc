#include "common/sampler/keyed_sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/sampler/philox.h"

namespace twinspan::sampler {
namespace {

constexpr uint32_t kSamplingStream = 0x6b657973;  // "keys": separates token draws from other uses.

int32_t Argmax(absl::Span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

}  // namespace

absl::Status SamplingParams::Validate() const {
  if (!std::isfinite(temperature) || temperature < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrFormat("sampling temperature %g must be finite and >= 0", temperature));
  }
  if (top_k < 0) return absl::InvalidArgumentError(absl::StrFormat("top_k %d is negative", top_k));
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrFormat("top_p %g is outside (0, 1]", top_p));
  }
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrFormat("min_p %g is outside [0, 1]", min_p));
  }
  return absl::OkStatus();
}

double KeyedUniform(uint64_t seed, int64_t position) {
  const uint64_t p = static_cast<uint64_t>(position);
  const PhiloxCounter out =
      Philox4x32({static_cast<uint32_t>(p), static_cast<uint32_t>(p >> 32), 0u, kSamplingStream},
                 {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  const uint64_t bits = (static_cast<uint64_t>(out[0]) << 21) ^ (out[1] >> 11);
  return static_cast<double>(bits) * 0x1p-53;
}

absl::StatusOr<int32_t> KeyedSampler::Sample(absl::Span<const float> logits,
                                             const SamplingParams& params, uint64_t seed,
                                             int64_t position) const {
  if (logits.empty()) return absl::InvalidArgumentError("Sample: empty logits");
  if (absl::Status s = params.Validate(); !s.ok()) return s;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) {
      return absl::InvalidArgumentError(absl::StrFormat("Sample: logit %d is NaN", i));
    }
  }
  if (params.temperature == 0.0f || params.top_k == 1) return Argmax(logits);

  const int64_t vocab = static_cast<int64_t>(logits.size());
  std::vector<float> z(vocab);
  for (int64_t i = 0; i < vocab; ++i) z[i] = logits[i] / params.temperature;
  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  const auto more_likely = [&](int32_t a, int32_t b) {
    return z[a] > z[b] || (z[a] == z[b] && a < b);
  };
  const bool use_top_k = params.top_k > 0 && params.top_k < vocab;
  if (use_top_k) {
    std::nth_element(order.begin(), order.begin() + params.top_k, order.end(), more_likely);
    order.resize(params.top_k);
    std::sort(order.begin(), order.end());  // Back to id order for the total below.
  }
  const int32_t most_likely = *std::min_element(order.begin(), order.end(), more_likely);
  const float z_max = z[most_likely];
  // All -inf, or z overflowed to +inf at a tiny temperature: the most likely id, as greedy.
  if (std::isinf(z_max)) return most_likely;
  const auto weight_of = [&](int32_t id) { return std::exp(static_cast<double>(z[id]) - z_max); };
  double total = 0.0;  // Over the candidates in id order.
  for (int32_t id : order) total += weight_of(id);

  size_t kept = order.size();
  if (use_top_k || params.top_p < 1.0f) {
    // Sort only as long a most-likely prefix as top_p needs: the order is total, so every prefix
    // length gives the same leading sequence as a full sort would.
    size_t sorted = params.top_p < 1.0f ? std::min<size_t>(order.size(), 256) : order.size();
    while (true) {
      if (sorted < order.size()) {
        std::nth_element(order.begin(), order.begin() + sorted, order.end(), more_likely);
      }
      std::sort(order.begin(), order.begin() + sorted, more_likely);
      if (params.top_p >= 1.0f) break;
      double mass = 0.0;
      size_t cut = 0;
      for (size_t i = 0; i < sorted && cut == 0; ++i) {
        mass += weight_of(order[i]);
        if (mass >= params.top_p * total) cut = i + 1;
      }
      if (cut > 0) {
        kept = cut;
        break;
      }
      if (sorted == order.size()) break;  // Rounding never reached top_p: keep everything.
      sorted = std::min(order.size(), sorted * 8);
    }
  }
  std::vector<double> weight(kept);
  for (size_t i = 0; i < kept; ++i) weight[i] = weight_of(order[i]);
  double kept_total = 0.0;
  for (size_t i = 0; i < kept; ++i) {
    if (weight[i] < params.min_p) weight[i] = 0.0;  // p / p_max = exp(z - z_max) = weight.
    kept_total += weight[i];
  }
  const double target = KeyedUniform(seed, position) * kept_total;
  double running = 0.0;
  size_t last_kept = 0;
  for (size_t i = 0; i < kept; ++i) {
    if (weight[i] == 0.0) continue;
    last_kept = i;
    running += weight[i];
    if (running > target) return order[i];
  }
  return order[last_kept];  // Rounding left target at the very top.
}

uint64_t SeedFromPrompt(absl::Span<const int32_t> prompt) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis.
  for (int32_t id : prompt) {
    const uint32_t u = static_cast<uint32_t>(id);
    for (int byte = 0; byte < 4; ++byte) {
      hash ^= (u >> (8 * byte)) & 0xffu;
      hash *= 0x100000001b3ull;  // FNV-1a 64 prime.
    }
  }
  hash ^= hash >> 30;  // SplitMix64 finalizer: spreads FNV's weak low bits.
  hash *= 0xbf58476d1ce4e5b9ull;
  hash ^= hash >> 27;
  hash *= 0x94d049bb133111ebull;
  hash ^= hash >> 31;
  return hash;
}

}  // namespace twinspan::sampler
