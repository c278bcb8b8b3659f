#include "services/target/engine/context_copy.h"

#include <algorithm>

namespace twinspan::engine {

uint64_t ContextCopyIndex::Hash(int64_t end) const {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (int64_t i = end - ngram_; i < end; ++i) {  // a multiply-xorshift per token (splitmix64)
    h ^= tokens_[i] + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  }
  return h;
}

void ContextCopyIndex::Append(absl::Span<const uint32_t> tokens) {
  for (uint32_t token : tokens) {
    tokens_.push_back(token);
    const int64_t end = size() - 1;  // the n-gram before the new token now has a continuation
    if (end >= ngram_) latest_end_[Hash(end)] = end;
  }
}

std::vector<uint32_t> ContextCopyIndex::Propose(int max_tokens) const {
  const int64_t n = size();
  if (n <= ngram_ || max_tokens < 1) return {};
  auto it = latest_end_.find(Hash(n));
  if (it == latest_end_.end()) return {};
  const int64_t end = it->second;
  // A hash collision is possible: the tokens themselves decide.
  if (!std::equal(tokens_.begin() + (end - ngram_), tokens_.begin() + end,
                  tokens_.begin() + (n - ngram_))) {
    return {};
  }
  return std::vector<uint32_t>(tokens_.begin() + end,
                               tokens_.begin() + std::min<int64_t>(n, end + max_tokens));
}

}  // namespace twinspan::engine
